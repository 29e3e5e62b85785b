package io.spillway.harness.grpcdemo;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.harness.grpcdemo.proto.DemoGrpc;
import io.spillway.harness.grpcdemo.proto.WorkReply;
import io.spillway.harness.grpcdemo.proto.WorkRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The clients of {@link GrpcFloodMain}: Spillway-aware sessions offering the demo's server more
 * than it can serve ({@link Honest}), and a plain client that invents a session id for every call
 * ({@link Flooder}), each counting its calls' ends by the measured window they were issued in
 * ({@link Windows}, {@link WindowCounts}).
 *
 * <p>The flood is the gRPC form of {@code AbuseWorkload.Greedy} with fresh sessions: the {@code
 * spillway-session} header is the client's to set (SpillwayMetadata), so any gRPC client can send
 * a new id on every call. The server's gate keeps each connection to 256 sessions on probation and
 * refuses the rest for credit (docs/results/reliability.md, "Session floods"); what that leaves the
 * honest sessions is what the harness measures.
 */
final class GrpcFloodWorkload {

  /** The first session id the flooder invents, far from the ids the honest sessions draw. */
  static final long FLOOD_SESSIONS_FROM = 1L << 40;

  private static final MethodDescriptor<WorkRequest, WorkReply> WORK = DemoGrpc.getWorkMethod();

  private GrpcFloodWorkload() { }

  /**
   * Which measured window is open, if any: a call is counted in the window open when it was
   * issued, so a window's counts are its own calls' ends, read once they have all ended.
   * Thread-safe.
   */
  static final class Windows {
    /** No window open: the call is not counted. */
    static final int NONE = -1;

    private volatile int open = NONE;

    /** Opens window {@code index}; calls issued from now on count in it. */
    void open(int index) {
      open = index;
    }

    /** Closes the window: calls issued from now on count in none. */
    void close() {
      open = NONE;
    }

    int current() {
      return open;
    }
  }

  /**
   * Counters per window: {@code windows} rows of {@code slots} counts. An add for {@link
   * Windows#NONE} is dropped. Thread-safe (atomic adds; a read sees each count's latest value).
   */
  static final class WindowCounts {
    private final int slots;
    private final AtomicLongArray counts;

    WindowCounts(int windows, int slots) {
      this.slots = slots;
      counts = new AtomicLongArray(windows * slots);
    }

    void add(int window, int slot) {
      if (window != Windows.NONE) {
        counts.incrementAndGet(window * slots + slot);
      }
    }

    long get(int window, int slot) {
      return counts.get(window * slots + slot);
    }

    /** Slots {@code from} to {@code to} (exclusive) of {@code window}, each. */
    long[] row(int window, int from, int to) {
      long[] out = new long[to - from];
      for (int s = from; s < to; s++) {
        out[s - from] = get(window, s);
      }
      return out;
    }
  }

  /** How a call ended, as the two clients tell ends apart. */
  enum End {
    /** Answered OK. */
    SERVED,
    /** Refused by the server's gate for credit ({@code spillway-status} REJECTED_NO_CREDIT). */
    REFUSED_FOR_CREDIT,
    /** Refused by the server's gate for another reason (its delay limit, AQM, expiry). */
    REFUSED_OTHER,
    /** Expired or refused in the caller's own Spillway session, never sent. */
    ENDED_IN_CLIENT,
    /** Anything else: a deadline, a closed connection. */
    FAILED;

    /** The end of a call that closed with {@code status} and {@code trailers}. */
    static End of(Status status, Metadata trailers) {
      if (status.isOk()) {
        return SERVED;
      }
      if (status.getCode() != Status.Code.RESOURCE_EXHAUSTED) {
        return FAILED;
      }
      if (!SpillwayMetadata.hasResponse(trailers)) {
        // the client session's own refusals carry no trailers of the server's
        String why = String.valueOf(status.getDescription());
        return why.startsWith("spillway: expired in the client") || why.startsWith("spillway: rejected in the client")
            ? ENDED_IN_CLIENT : FAILED;
      }
      ResponseMetadata response = new ResponseMetadata();
      SpillwayMetadata.readResponse(trailers, response);
      return response.status() == io.spillway.api.Status.REJECTED_NO_CREDIT ? REFUSED_FOR_CREDIT : REFUSED_OTHER;
    }
  }

  /**
   * The headers of a flood call: a session id never used before, registering. What a plain
   * client that knows the metadata keys can send (SessionFloodOverSocketsTest).
   */
  static Metadata floodHeaders(long sessionId) {
    Metadata headers = new Metadata();
    SpillwayMetadata.writeRequest(new RequestMetadata().sessionId(sessionId)
        .flags(RequestMetadata.FLAG_REGISTER), headers);
    return headers;
  }

  private static ManagedChannel channel(int port, NioEventLoopGroup group) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().eventLoopGroup(group)
        .channelType(NioSocketChannel.class).directExecutor().build();
  }

  private static void send(ClientCall<WorkRequest, WorkReply> call, ClientCall.Listener<WorkReply> listener,
      Metadata headers, long id) {
    call.start(listener, headers);
    call.request(1);
    call.sendMessage(WorkRequest.newBuilder().setId(id).build());
    call.halfClose();
  }

  /**
   * Spillway-aware sessions, one {@link SpillwayClientInterceptor} on a channel (a connection) of
   * its own each, as the quick start sets one up, driven open-loop from one thread: Poisson
   * arrivals at a fixed total rate, dealt to the sessions in turn, until {@link #stop()}. A call's
   * latency runs from its due time (docs/design.md, "Measures"), and it is good when served within
   * the SLO. Every call carries the demo's 1 s deadline ({@link DemoLoad#DEADLINE_MS}). Answers
   * arrive on the event loop given, shared by every honest session of the run.
   */
  static final class Honest implements AutoCloseable {
    /** Per window: each session's calls served, then each session's good ones, then the slots below. */
    private static final int ENDED_IN_CLIENT = 0;
    private static final int REFUSED = 1;
    private static final int FAILED = 2;
    private static final int SHARED_SLOTS = 3;

    private final int sessions;
    private final long sloNanos;
    private final Windows windows;
    private final WindowCounts counts;
    private final List<ManagedChannel> managed = new ArrayList<>();
    private final List<SpillwayClientInterceptor> interceptors = new ArrayList<>();
    private final Channel[] channels;
    private final AtomicLong answered = new AtomicLong();
    private final AtomicInteger outstanding = new AtomicInteger();
    private final Thread driver;
    private volatile boolean stop;

    /**
     * Opens {@code sessions} channels to {@code port} on {@code group} and starts calling at
     * {@code rps} in all.
     */
    Honest(int port, NioEventLoopGroup group, int sessions, double rps, long sloNanos, Windows windows,
        int windowCount, long seed, String name) {
      this.sessions = sessions;
      this.sloNanos = sloNanos;
      this.windows = windows;
      counts = new WindowCounts(windowCount, 2 * sessions + SHARED_SLOTS);
      channels = new Channel[sessions];
      for (int i = 0; i < sessions; i++) {
        ManagedChannel ch = channel(port, group);
        SpillwayClientInterceptor session = SpillwayGrpc.client().sloNanos(sloNanos).build();
        managed.add(ch);
        interceptors.add(session);
        channels[i] = ClientInterceptors.intercept(ch, session);
      }
      long[] next = new long[1];
      driver = Thread.ofPlatform().name(name).start(() -> PoissonArrivals.driveWhile(rps, System.nanoTime(),
          seed, due -> !stop, due -> {
            int s = (int) (next[0] % sessions);
            call(channels[s], s, due, next[0]++);
          }));
    }

    private void call(Channel channel, int session, long due, long id) {
      int window = windows.current();
      outstanding.incrementAndGet();
      send(channel.newCall(WORK, CallOptions.DEFAULT.withDeadlineAfter(DemoLoad.DEADLINE_MS, TimeUnit.MILLISECONDS)),
          new ClientCall.Listener<>() {
            @Override
            public void onClose(Status status, Metadata trailers) {
              long latency = System.nanoTime() - due;
              switch (End.of(status, trailers)) {
                case SERVED -> {
                  counts.add(window, session);
                  if (latency <= sloNanos) {
                    counts.add(window, sessions + session);
                  }
                }
                case ENDED_IN_CLIENT -> counts.add(window, 2 * sessions + ENDED_IN_CLIENT);
                case REFUSED_FOR_CREDIT, REFUSED_OTHER -> counts.add(window, 2 * sessions + REFUSED);
                case FAILED -> counts.add(window, 2 * sessions + FAILED);
              }
              answered.incrementAndGet();
              outstanding.decrementAndGet();
            }
          }, new Metadata(), id);
    }

    /** Calls ended so far, in any window or none. */
    long answered() {
      return answered.get();
    }

    /** Each session's calls served in {@code window}. */
    long[] served(int window) {
      return counts.row(window, 0, sessions);
    }

    /** The calls served within the SLO in {@code window}, every session's. */
    long good(int window) {
      long sum = 0;
      for (long g : counts.row(window, sessions, 2 * sessions)) {
        sum += g;
      }
      return sum;
    }

    /** Calls of {@code window} that expired or were refused in their own session, never sent. */
    long endedInClient(int window) {
      return counts.get(window, 2 * sessions + ENDED_IN_CLIENT);
    }

    /** Calls of {@code window} the server refused. */
    long refused(int window) {
      return counts.get(window, 2 * sessions + REFUSED);
    }

    /** Calls of {@code window} that failed otherwise (deadline, connection). */
    long failed(int window) {
      return counts.get(window, 2 * sessions + FAILED);
    }

    /**
     * Stops issuing and waits until every call issued has ended (each within its deadline); false
     * if some had not after three deadlines.
     */
    boolean stop() throws InterruptedException {
      stop = true;
      driver.join();
      return awaitNone(outstanding);
    }

    @Override
    public void close() {
      stop = true;
      interceptors.forEach(SpillwayClientInterceptor::close);
      shutdown(managed);
    }
  }

  /**
   * A plain client (no Spillway interceptor) on a channel and an event loop of its own that keeps
   * a fixed number of calls outstanding, each with a session id never used before ({@link
   * #floodHeaders}), and sends the next as soon as one ends, served or refused, until {@link
   * #stop()}: as many calls as the server answers, each registering a new session.
   */
  static final class Flooder implements AutoCloseable {
    private final NioEventLoopGroup group = new NioEventLoopGroup(1);
    private final ManagedChannel channel;
    private final Windows windows;
    private final WindowCounts counts;
    /**
     * Shared by every flooder of this JVM: a flooder started after another must not name the
     * sessions the first left on probation, or it would bring them back (a later request of a
     * registered session ends its probation) where an inventing client never does.
     */
    private static final AtomicLong NEXT_SESSION = new AtomicLong(FLOOD_SESSIONS_FROM);
    private final AtomicLong invented = new AtomicLong();
    private final AtomicLong answered = new AtomicLong();
    private final AtomicInteger outstanding = new AtomicInteger();
    private volatile boolean stop;

    Flooder(int port, Windows windows, int windowCount) {
      this.windows = windows;
      counts = new WindowCounts(windowCount, End.values().length);
      channel = channel(port, group);
    }

    /** Sends {@code calls} at once; each that ends is replaced until {@link #stop()}. */
    void start(int calls) {
      for (int i = 0; i < calls; i++) {
        outstanding.incrementAndGet();
        group.execute(this::next);
      }
    }

    private void next() {
      int window = windows.current();
      long session = NEXT_SESSION.getAndIncrement();
      invented.incrementAndGet();
      send(channel.newCall(WORK, CallOptions.DEFAULT.withDeadlineAfter(DemoLoad.DEADLINE_MS, TimeUnit.MILLISECONDS)),
          new ClientCall.Listener<>() {
            @Override
            public void onClose(Status status, Metadata trailers) {
              counts.add(window, End.of(status, trailers).ordinal());
              answered.incrementAndGet();
              if (stop) {
                outstanding.decrementAndGet();
              } else {
                // through the loop's queue, not from here: a call that fails at once (a closed
                // channel) would otherwise recurse
                group.execute(Flooder.this::next);
              }
            }
          }, floodHeaders(session), session);
    }

    /** Calls of {@code window} that ended so. */
    long count(int window, End end) {
      return counts.get(window, end.ordinal());
    }

    /** Calls ended so far, in any window or none. */
    long answered() {
      return answered.get();
    }

    /** Session ids invented so far: one a call. */
    long sessionsInvented() {
      return invented.get();
    }

    /** Stops replacing calls and waits until those outstanding have ended; false if not in three deadlines. */
    boolean stop() throws InterruptedException {
      stop = true;
      return awaitNone(outstanding);
    }

    @Override
    public void close() {
      stop = true;
      shutdown(List.of(channel));
      try {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // closing goes on; the caller sees the interrupt
      }
    }
  }

  private static boolean awaitNone(AtomicInteger outstanding) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * DemoLoad.DEADLINE_MS);
    while (outstanding.get() > 0 && System.nanoTime() - until < 0) {
      Thread.sleep(5);
    }
    return outstanding.get() == 0;
  }

  private static void shutdown(List<ManagedChannel> channels) {
    channels.forEach(ManagedChannel::shutdownNow);
    try {
      for (ManagedChannel ch : channels) {
        ch.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // closing goes on; the caller sees the interrupt
    }
  }
}
