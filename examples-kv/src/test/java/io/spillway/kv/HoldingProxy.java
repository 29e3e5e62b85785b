package io.spillway.kv;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.TimeUnit;

/**
 * A TCP relay between a memcached client and the server that can hold what the client sends: while
 * held, the client's bytes are kept until {@link #release} hands them to the server in one write.
 * A test that waits for {@link #awaitHeldLines} lines knows the client wrote all those commands
 * before the server could answer any of them, so they were all in flight on one connection when the
 * server answered, whatever the client's writer threads did; replies pass straight through.
 * {@link #stall} stops reading the client instead, so that its socket fills and what it sends next
 * waits in its own queue. Each client connection is relayed on a connection of its own to the
 * server.
 */
final class HoldingProxy implements AutoCloseable {

  private final ServerSocket listener;
  private final int serverPort;
  private final Object lock = new Object();
  private boolean holding;
  private boolean stalled;
  private final ByteArrayOutputStream held = new ByteArrayOutputStream();
  private int heldLines;
  /** The server side of the connection whose bytes are held. */
  private Socket heldFor;
  private volatile boolean closed;
  /** Every relayed socket still open, both sides: {@link #reset} closes them. */
  private final java.util.Set<Socket> open = java.util.concurrent.ConcurrentHashMap.newKeySet();

  HoldingProxy(int serverPort) throws IOException {
    this.serverPort = serverPort;
    listener = new ServerSocket();
    // a small, fixed receive buffer (no autotuning): a stalled relay backs up into the client soon
    listener.setReceiveBufferSize(4096);
    listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    Thread acceptor = new Thread(this::acceptLoop, "proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return listener.getLocalPort();
  }

  /** Keeps the client's bytes from now on, until {@link #release}. */
  void hold() {
    synchronized (lock) {
      holding = true;
      held.reset();
      heldLines = 0;
      heldFor = null;
    }
  }

  /**
   * Stops reading what the client sends, so that its socket fills and its writer queues the
   * commands that follow, until {@link #resume}.
   */
  void stall() {
    synchronized (lock) {
      stalled = true;
    }
  }

  /** Reads the client's bytes again (held, if {@link #hold} was called). */
  void resume() {
    synchronized (lock) {
      stalled = false;
      lock.notifyAll();
    }
  }

  /** Waits until the held bytes hold {@code lines} line ends; fails after 20 s. */
  void awaitHeldLines(int lines) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    synchronized (lock) {
      while (heldLines < lines) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new AssertionError("the client sent " + heldLines + " lines, not " + lines + ": "
              + held.toString(java.nio.charset.StandardCharsets.ISO_8859_1));
        }
        TimeUnit.NANOSECONDS.timedWait(lock, left);
      }
      if (heldLines > lines) {
        throw new AssertionError("the client sent " + heldLines + " lines, more than " + lines + ": "
            + held.toString(java.nio.charset.StandardCharsets.ISO_8859_1));
      }
    }
  }

  /** Waits until the held bytes, as text, satisfy {@code condition}; fails after 20 s. */
  void awaitHeld(java.util.function.Predicate<String> condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    synchronized (lock) {
      while (!condition.test(held.toString(java.nio.charset.StandardCharsets.ISO_8859_1))) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new AssertionError("the client did not send what was awaited: "
              + held.toString(java.nio.charset.StandardCharsets.ISO_8859_1));
        }
        TimeUnit.NANOSECONDS.timedWait(lock, left);
      }
    }
  }

  /**
   * Relays everything as it comes again: not stalled, not held, what was held dropped, and every
   * connection relayed so far closed (a test ends with this, whatever state it failed in). A
   * client shut down at the end of a test may still be writing what it had queued, or
   * reconnecting; were its connection left open, those bytes could arrive while the next test
   * holds, as if they were that test's client's.
   */
  void reset() {
    for (Socket socket : open) {
      try {
        socket.close();
      } catch (IOException e) {
        // closed already
      }
    }
    open.clear();
    synchronized (lock) {
      stalled = false;
      holding = false;
      held.reset();
      heldLines = 0;
      heldFor = null;
      lock.notifyAll();
    }
  }

  /** What the client sent while held, as text. */
  String heldText() {
    synchronized (lock) {
      return held.toString(java.nio.charset.StandardCharsets.ISO_8859_1);
    }
  }

  /**
   * Sends the held bytes to the server in one write and relays everything from now on. A server
   * may answer a command before it has read all that follows (memcached's "object too large"
   * comes after the command line, before the value), and a client that drops its connection for
   * that answer closes the relay while this write is still under way: the write then ends there,
   * and what the client saw is for the test to check. Any other failure to write is thrown.
   */
  void release() throws IOException {
    synchronized (lock) {
      holding = false;
      try {
        if (heldFor != null && held.size() > 0) {
          OutputStream out = heldFor.getOutputStream();
          out.write(held.toByteArray());
          out.flush();
        }
      } catch (IOException e) {
        if (heldFor == null || !heldFor.isClosed()) {
          throw e;
        }
      } finally {
        held.reset();
        heldLines = 0;
        heldFor = null;
      }
    }
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket();
        server.setTcpNoDelay(true);
        client.setTcpNoDelay(true);
        server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), serverPort));
        open.add(client);
        open.add(server);
        start(() -> relayUp(client, server));
        start(() -> relayDown(server, client));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private static void start(Runnable r) {
    Thread t = new Thread(r, "proxy-relay");
    t.setDaemon(true);
    t.start();
  }

  private void relayUp(Socket client, Socket server) {
    byte[] buf = new byte[64 * 1024];
    try (client; server) {
      InputStream in = client.getInputStream();
      OutputStream out = server.getOutputStream();
      int n;
      while ((n = readWhenNotStalled(in, buf)) >= 0) {
        synchronized (lock) {
          if (holding) {
            if (heldFor != null && heldFor != server) {
              throw new AssertionError("two connections sent while held");
            }
            heldFor = server;
            held.write(buf, 0, n);
            for (int i = 0; i < n; i++) {
              if (buf[i] == '\n') {
                heldLines++;
              }
            }
            lock.notifyAll();
            continue;
          }
          out.write(buf, 0, n);
          out.flush();
        }
      }
    } catch (IOException e) {
      // one side closed: both are closed by the try
    } finally {
      open.remove(client);
      open.remove(server);
    }
  }

  private int readWhenNotStalled(InputStream in, byte[] buf) throws IOException {
    synchronized (lock) {
      while (stalled) {
        try {
          lock.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException(e);
        }
      }
    }
    // at most a small read: a stall that starts now keeps the rest in the client's socket
    return in.read(buf, 0, 4096);
  }

  private static void relayDown(Socket server, Socket client) {
    byte[] buf = new byte[64 * 1024];
    try (server; client) {
      InputStream in = server.getInputStream();
      OutputStream out = client.getOutputStream();
      int n;
      while ((n = in.read(buf)) >= 0) {
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // one side closed
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    listener.close();
  }
}
