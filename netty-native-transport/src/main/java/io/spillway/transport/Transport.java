package io.spillway.transport;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import java.lang.System.Logger.Level;
import java.util.Locale;

/**
 * The I/O transport: io_uring, then epoll, then NIO, the first available one, or the one named by
 * the system property {@code spillway.transport} ({@code io_uring}, {@code epoll} or {@code nio}).
 * A transport that is skipped is logged with Netty's reason ({@code unavailabilityCause()}); a
 * forced transport that is unavailable is an error naming that reason.
 *
 * <p>Immutable and thread-safe.
 */
public enum Transport {
  IO_URING("io_uring", IoUringServerSocketChannel.class, IoUringSocketChannel.class),
  EPOLL("epoll", EpollServerSocketChannel.class, EpollSocketChannel.class),
  NIO("nio", NioServerSocketChannel.class, NioSocketChannel.class);

  /** The system property that forces a transport. */
  public static final String PROPERTY = "spillway.transport";
  private static final System.Logger LOG = System.getLogger(Transport.class.getName());
  /** Netty's switch for io_uring's multishot POLL_ADD, read once as its {@code IoUring} class initializes. */
  static final String IO_URING_POLL_ADD_MULTISHOT = "io.netty.iouring.pollAddMultishotEnabled";

  static {
    // With multishot POLL_ADD, Netty 4.2's io_uring channels (4.2.18, Linux 6.18) miss most resets
    // (RST) from the peer of a connection with no read in progress: the channel never goes inactive,
    // so what the server holds for it (sessions, their credits, a request admitted at its header
    // and awaiting its payload) is never released. Single-shot POLL_ADD, re-armed for each read,
    // sees every one (ServerClientTest#aResetConnectionEndsTheRequestAwaitingItsPayload). Set
    // before IoUring initializes, which nothing here triggers before this class; a value the
    // application sets itself is kept.
    if (System.getProperty(IO_URING_POLL_ADD_MULTISHOT) == null) {
      System.setProperty(IO_URING_POLL_ADD_MULTISHOT, "false");
    }
  }

  private final String id;
  private final Class<? extends ServerChannel> serverChannel;
  private final Class<? extends Channel> channel;

  Transport(String id, Class<? extends ServerChannel> serverChannel, Class<? extends Channel> channel) {
    this.id = id;
    this.serverChannel = serverChannel;
    this.channel = channel;
  }

  /** The name used by {@link #PROPERTY}. */
  public String id() {
    return id;
  }

  /** Whether this machine can use it. */
  public boolean isAvailable() {
    return unavailabilityCause() == null;
  }

  /** Why it cannot be used here, or {@code null} if it can. */
  public Throwable unavailabilityCause() {
    try {
      return switch (this) {
        case IO_URING -> IoUring.isAvailable() ? null : IoUring.unavailabilityCause();
        case EPOLL -> Epoll.isAvailable() ? null : Epoll.unavailabilityCause();
        case NIO -> null;
      };
    } catch (LinkageError e) {
      return e;
    }
  }

  /** A new event-loop group of {@code threads} threads for this transport. */
  public EventLoopGroup newEventLoopGroup(int threads) {
    return new MultiThreadIoEventLoopGroup(threads, ioHandlerFactory());
  }

  /**
   * A new event-loop group whose loops busy-poll for I/O while {@code polls} is true and wait in the
   * kernel otherwise, for the threading models' polling reception (mutune-osdi18 §3.1). Every
   * transport can: the loops' handlers are this transport's, told not to block while polling
   * ({@link ReceptionIoHandlerFactory}).
   */
  EventLoopGroup newEventLoopGroup(int threads, java.util.function.BooleanSupplier polls) {
    return new MultiThreadIoEventLoopGroup(threads, new ReceptionIoHandlerFactory(ioHandlerFactory(), polls));
  }

  private IoHandlerFactory ioHandlerFactory() {
    return switch (this) {
      case IO_URING -> IoUringIoHandler.newFactory();
      case EPOLL -> EpollIoHandler.newFactory();
      case NIO -> NioIoHandler.newFactory();
    };
  }

  public Class<? extends ServerChannel> serverChannelClass() {
    return serverChannel;
  }

  public Class<? extends Channel> channelClass() {
    return channel;
  }

  /**
   * The transport to use: the one forced by {@link #PROPERTY}, or the first available of io_uring,
   * epoll, NIO, logging why each skipped one was skipped.
   *
   * @throws IllegalStateException if the property names an unknown or unavailable transport
   */
  public static Transport select() {
    return select(System.getProperty(PROPERTY));
  }

  /** As {@link #select()}, with the forced name given ({@code null} or blank: none forced). */
  public static Transport select(String forced) {
    if (forced != null && !forced.isBlank()) {
      Transport t = byId(forced.strip());
      Throwable cause = t.unavailabilityCause();
      if (cause != null) {
        throw new IllegalStateException(PROPERTY + "=" + forced + " is not available here: " + cause, cause);
      }
      return t;
    }
    for (Transport t : values()) {
      Throwable cause = t.unavailabilityCause();
      if (cause == null) {
        return t;
      }
      LOG.log(Level.INFO, "transport {0} unavailable, trying the next: {1}", t.id, cause.toString());
    }
    return NIO;
  }

  static Transport byId(String id) {
    for (Transport t : values()) {
      if (t.id.equals(id.toLowerCase(Locale.ROOT)) || t.name().equalsIgnoreCase(id)) {
        return t;
      }
    }
    throw new IllegalStateException("unknown transport '" + id + "' for " + PROPERTY + "; use io_uring, epoll or nio");
  }
}
