package io.spillway.harness;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.credit.Spillway;
import io.spillway.transport.OverloadRejectedException;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.internal.Frame;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * A client that ignores its credit window, on real sockets, beside honest ones: the workload of
 * {@code SocketAbuseTest} (driven by counts, asserting the server's ledger) and of
 * {@link SocketAbuseMain} (timed windows, printing what each side was served).
 *
 * <p>The server is a {@link SpillwayServer} with the Spillway default for an SLO of
 * {@value #SLO_NANOS} ns, one worker, {@value #SERVICE_NANOS} ns of spin per request. The honest
 * sessions ({@link Honest}) are {@link SpillwayClient} sessions, each keeping
 * {@value #HONEST_OUTSTANDING} calls issued through its gate. The greedy session ({@link Greedy})
 * is a raw connection whose one session keeps {@value #GREEDY_OUTSTANDING} requests in flight
 * whatever it is granted: it sends them in one write (the first registers the session, which
 * holds one credit then) and resends at once on each answer, served or refused, reporting no
 * demand. The forger ({@link Forger}) is an honest session of the same appetite on a connection
 * of its own that also sends deregister frames for the honest sessions' ids.
 */
final class AbuseWorkload {

  static final long SLO_NANOS = 10_000_000;
  static final long SERVICE_NANOS = 50_000;
  static final int HONEST_SESSIONS = 8;
  static final int HONEST_OUTSTANDING = 16;
  static final int GREEDY_OUTSTANDING = 16;
  /** The first of the session ids a client flooding sessions invents, one per request. */
  static final long FLOOD_SESSIONS_FROM = 1L << 40;

  /** The greedy session's id; an honest session of the same appetite takes the next one. */
  static final long GREEDY_SESSION = 1_000_000;
  /** For {@link Honest}: replace every call that ends until {@link Honest#stop()}. */
  static final long UNTIL_STOPPED = Long.MAX_VALUE;

  private AbuseWorkload() { }

  /** The server's scheme, the Spillway default; wrap it to watch the gate. */
  static OverloadScheme scheme() {
    return Spillway.forSloNanos(SLO_NANOS);
  }

  /** A started server running {@code scheme} on one worker, each request a spin of the service time. */
  static SpillwayServer server(OverloadScheme scheme) throws InterruptedException {
    return server(scheme, OverloadMetrics.NONE, null);
  }

  /**
   * As above, its gate reporting to {@code metrics}; with a {@code dispatcher}, requests run on it
   * and the gate does not see its queue (without one, on the server's default: {@link
   * SpillwayServer}).
   */
  static SpillwayServer server(OverloadScheme scheme, OverloadMetrics metrics, java.util.concurrent.Executor dispatcher)
      throws InterruptedException {
    SpillwayServer.Builder b = SpillwayServer.builder().scheme(scheme).parallelism(1)
        .handler(HarnessServer::spin).metrics(metrics);
    if (dispatcher != null) {
      b.dispatcher(dispatcher, io.spillway.api.QueueDelaySignal.NONE);
    }
    return b.build().start();
  }

  /** A started client with {@code sessions} sessions from {@code firstSessionId}, a connection each. */
  static SpillwayClient client(int port, int sessions, long firstSessionId) throws InterruptedException {
    return SpillwayClient.builder().scheme(scheme()).port(port).connections(sessions).sessions(sessions)
        .firstSessionId(firstSessionId).sloNanos(SLO_NANOS).build().start();
  }

  private static byte[] payload() {
    return ByteBuffer.allocate(8).putLong(SERVICE_NANOS).array();
  }

  /**
   * Honest sessions, each keeping {@link #HONEST_OUTSTANDING} calls issued through its gate: a
   * call that ends (served or refused) is replaced, until the session has issued its number of
   * calls or, with {@link #UNTIL_STOPPED}, until {@link #stop()}. A call that fails with its
   * connection is not replaced. Counts per session the calls served, and those served within the
   * SLO (counted from the call).
   */
  static final class Honest {
    final AtomicLongArray served;
    final AtomicLongArray good;
    final AtomicLong issued = new AtomicLong();
    final AtomicLong ended = new AtomicLong();
    final AtomicLong endedTwice = new AtomicLong();
    final Map<Status, AtomicLong> refused = new ConcurrentHashMap<>();
    final AtomicLong failed = new AtomicLong();
    private final AtomicLongArray issuedBySession;
    private final long callsPerSession;
    private final long planned;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final CountDownLatch done = new CountDownLatch(1);
    private final CountDownLatch everyServed;
    private final byte[] payload = payload();
    private final long[] sessionIds;

    /**
     * Starts the calls of every session of {@code client}.
     *
     * @param callsPerSession calls each session issues in all, or {@link #UNTIL_STOPPED}
     */
    Honest(SpillwayClient client, long callsPerSession) {
      this(client, 0, callsPerSession);
    }

    /**
     * Starts the calls of the sessions of {@code client} from index {@code firstSession} on; the
     * ones before it are left alone (the {@link Forger}'s, which it only names).
     */
    Honest(SpillwayClient client, int firstSession, long callsPerSession) {
      int n = client.sessionCount() - firstSession;
      this.callsPerSession = callsPerSession;
      this.planned = callsPerSession == UNTIL_STOPPED ? UNTIL_STOPPED : callsPerSession * n;
      served = new AtomicLongArray(n);
      good = new AtomicLongArray(n);
      issuedBySession = new AtomicLongArray(n);
      everyServed = new CountDownLatch(n);
      sessionIds = new long[n];
      for (int s = 0; s < n; s++) {
        sessionIds[s] = client.session(firstSession + s).id();
      }
      for (int s = 0; s < n; s++) {
        for (int i = 0; i < HONEST_OUTSTANDING; i++) {
          next(client.session(firstSession + s), s);
        }
      }
    }

    /** The session ids, as the server's gate sees them. */
    long[] sessionIds() {
      return sessionIds.clone();
    }

    private void next(SpillwayClient.Session session, int index) {
      if (stop.get() || issuedBySession.incrementAndGet(index) > callsPerSession) {
        return;
      }
      issued.incrementAndGet();
      long start = System.nanoTime();
      AtomicBoolean once = new AtomicBoolean();
      CompletableFuture<byte[]> call = session.call(payload, start);
      call.whenComplete((r, e) -> {
        if (!once.compareAndSet(false, true)) {
          endedTwice.incrementAndGet();
          return;
        }
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        boolean failedNow = false;
        if (cause == null) {
          if (served.incrementAndGet(index) == 1) {
            everyServed.countDown();
          }
          if (System.nanoTime() - start <= SLO_NANOS) {
            good.incrementAndGet(index);
          }
          next(session, index); // issued before this one counts as ended: see stop()
        } else if (cause instanceof OverloadRejectedException rejected) {
          refused.computeIfAbsent(rejected.status(), k -> new AtomicLong()).incrementAndGet();
          next(session, index);
        } else {
          failed.incrementAndGet();
          failedNow = true;
        }
        long endedNow = ended.incrementAndGet();
        if (failedNow || endedNow == planned || (stop.get() && endedNow == issued.get())) {
          done.countDown(); // a failure ends the wait: the calls it leaves would never end
        }
      });
    }

    long[] servedNow() {
      long[] out = new long[served.length()];
      Arrays.setAll(out, served::get);
      return out;
    }

    long goodNow() {
      long sum = 0;
      for (int i = 0; i < good.length(); i++) {
        sum += good.get(i);
      }
      return sum;
    }

    /** Stops replacing calls (with {@link #UNTIL_STOPPED}); {@link #awaitEnded} then waits for the rest. */
    void stop() {
      stop.set(true);
      if (ended.get() == issued.get()) {
        done.countDown(); // the last one ended before the stop was seen
      }
    }

    /**
     * Waits until every planned call has ended (or, after {@link #stop()}, every call issued), or
     * one failed with its connection; false if {@code timeout} passed first.
     */
    boolean awaitEnded(long timeout, TimeUnit unit) throws InterruptedException {
      return done.await(timeout, unit);
    }

    /**
     * Waits until every session has been served once: each is then registered at the server and
     * bound to its connection. False if {@code timeout} passed first.
     */
    boolean awaitEveryServed(long timeout, TimeUnit unit) throws InterruptedException {
      return everyServed.await(timeout, unit);
    }

    /** {@link #awaitEnded(long, TimeUnit)} without a bound. */
    void awaitEnded() throws InterruptedException {
      done.await();
    }
  }

  /**
   * A client that ends other clients' sessions, or tries to: on a connection of its own, one
   * session of the same appetite as an honest one, driven through its gate by an {@link Honest}
   * ({@link #own}), and, every period, a deregister frame (Breakwater §3: the message by which a
   * client leaves and returns its credits) for each honest session's id. It is given the real ids,
   * the worst case, as if it had read them off the wire. It never sends a request on them, so the
   * frames are all the attack: the server ends a session only on the connection that owns it
   * ({@code ServerFrameHandler}), and a frame from any other one must change nothing.
   *
   * <p>The client is a plain {@link SpillwayClient} with one connection whose sessions are the
   * victims' ids followed by its own; the victims' sessions are only ever asked to {@link
   * SpillwayClient.Session#deregister()}, which writes the frame on the forger's connection. The
   * forging runs on that connection's event loop, so its frames and its own requests leave in the
   * order they were made.
   */
  static final class Forger implements AutoCloseable {
    /** Its own session's calls. */
    final Honest own;
    private final SpillwayClient client;
    private final int victims;
    private final AtomicLong forged = new AtomicLong();
    private final CountDownLatch reached = new CountDownLatch(1);
    private volatile long reachAt = Long.MAX_VALUE;
    private final byte[] payload = payload();
    private volatile java.util.concurrent.ScheduledFuture<?> forging;

    /**
     * Connects and starts its own session's calls; forges nothing until {@link #forgeEvery}.
     *
     * @param firstVictim the first of the honest sessions' ids, which run consecutively (a {@link
     *     SpillwayClient} numbers its sessions so); its own session takes the id after the last
     * @param victims how many honest sessions there are
     */
    Forger(int port, long firstVictim, int victims) throws InterruptedException {
      this.victims = victims;
      client = SpillwayClient.builder().scheme(scheme()).port(port).connections(1).sessions(victims + 1)
          .firstSessionId(firstVictim).sloNanos(SLO_NANOS).build().start();
      own = new Honest(client, victims, UNTIL_STOPPED);
    }

    /** Its own session's id, the one after the victims'. */
    long ownId() {
      return client.session(victims).id();
    }

    /** From now, every {@code periodNanos}, one deregister frame for each victim. */
    void forgeEvery(long periodNanos) {
      forging = client.eventLoop(0).scheduleAtFixedRate(this::forgeRound, periodNanos, periodNanos,
          TimeUnit.NANOSECONDS);
    }

    private void forgeRound() {
      for (int i = 0; i < victims; i++) {
        client.session(i).deregister(); // on this loop: written at once, flushed with the round
      }
      if (forged.addAndGet(victims) >= reachAt) {
        reached.countDown();
      }
    }

    /** Deregister frames written so far. */
    long forged() {
      return forged.get();
    }

    /**
     * Waits until it has written at least {@code frames} (one wait per instance); false if
     * {@code timeout} passed first.
     */
    boolean awaitForged(long frames, long timeout, TimeUnit unit) throws InterruptedException {
      reachAt = frames;
      return forged.get() >= frames || reached.await(timeout, unit);
    }

    /**
     * Stops forging and returns how many frames it wrote in all. The timer is cancelled on the
     * loop it runs on, so no round runs after this returns.
     */
    long stopForging() throws Exception {
      java.util.concurrent.ScheduledFuture<?> f = forging;
      if (f != null) {
        client.eventLoop(0).submit(() -> f.cancel(false)).get();
      }
      return forged.get();
    }

    /**
     * After {@link #stopForging()}: stops its own session's calls, waits for them to end, then calls
     * once more until a call is served. That call was written after every forged frame, on the same
     * connection, and the server decodes a connection's frames in order, so once it is answered the
     * server has read every forged frame. Returns how many calls it took.
     */
    int confirmDecoded() throws Exception {
      own.stop();
      if (!own.awaitEnded(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the forger's own calls did not end in 30 s");
      }
      for (int attempt = 1; attempt <= 1_000; attempt++) {
        try {
          client.session(victims).callBlocking(payload);
          return attempt;
        } catch (OverloadRejectedException refused) {
          // dropped or expired: another, until one is served
        }
      }
      throw new IllegalStateException("the forger's session was not served in 1,000 calls");
    }

    /** Deregisters its own session, on its own connection: the one deregistration the server honours. */
    void deregisterOwn() {
      client.session(victims).deregister();
    }

    @Override
    public void close() {
      client.close();
    }
  }

  /**
   * The session that ignores its window, on a connection of its own: sends
   * {@link #GREEDY_OUTSTANDING} requests at once (the first registers the session) and one more
   * whenever an answer arrives, credit or not, until {@link #stop()}. Blocking socket I/O on one
   * platform thread. With {@code freshSessions} it floods sessions instead: every request
   * registers a session id never used before, so no window of its own ever holds it.
   */
  static final class Greedy implements AutoCloseable {
    final AtomicLong served = new AtomicLong();
    final AtomicLong refusedForCredit = new AtomicLong();
    final AtomicLong refusedOther = new AtomicLong();
    final AtomicLong controlFrames = new AtomicLong();
    private final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;
    private final byte[] payload = payload();
    private final long resendNanos;
    private final boolean freshSessions;
    private final CountDownLatch drained = new CountDownLatch(1);
    private volatile boolean stop;
    private volatile IOException failure;
    private long requestId;
    private final Thread reader;

    /**
     * Connects and sends the first burst.
     *
     * @param resendNanos how long to wait before each resend (0: at once); a paced variant weighs
     *     what answering its refusals costs the server
     * @param freshSessions each request registers a new session id ({@link #FLOOD_SESSIONS_FROM}
     *     upwards) instead of the greedy session's
     */
    Greedy(int port, long resendNanos, boolean freshSessions) throws IOException {
      this.resendNanos = resendNanos;
      this.freshSessions = freshSessions;
      socket = new Socket("127.0.0.1", port);
      socket.setTcpNoDelay(true);
      out = socket.getOutputStream();
      in = new DataInputStream(socket.getInputStream());
      // all at once, in one write: they reach the server together, before the first is answered
      ByteBuf burst = Unpooled.buffer();
      try {
        for (int i = 0; i < GREEDY_OUTSTANDING; i++) {
          frame(burst, i == 0);
        }
        burst.readBytes(out, burst.readableBytes());
      } finally {
        burst.release();
      }
      out.flush();
      reader = Thread.ofPlatform().name("greedy-reader").start(this::read);
    }

    /** CPU time of the thread that reads its answers and resends, in nanoseconds. */
    long cpuNanos() {
      return java.lang.management.ManagementFactory.getThreadMXBean().getThreadCpuTime(reader.threadId());
    }

    private void frame(ByteBuf buf, boolean register) {
      long id = ++requestId;
      RequestMetadata header = freshSessions
          ? new RequestMetadata().sessionId(FLOOD_SESSIONS_FROM + id).requestId(id)
              .flags(RequestMetadata.FLAG_REGISTER)
          : new RequestMetadata().sessionId(GREEDY_SESSION).requestId(id)
              .flags(register ? RequestMetadata.FLAG_REGISTER : 0);
      Frame.writeRequest(buf, Frame.TYPE_REQUEST, header, payload.length);
      buf.writeBytes(payload);
    }

    private void send() throws IOException {
      ByteBuf buf = Unpooled.buffer(Frame.HEADER_SIZE + payload.length);
      try {
        frame(buf, false);
        buf.readBytes(out, buf.readableBytes());
      } finally {
        buf.release();
      }
    }

    private void read() {
      byte[] header = new byte[Frame.HEADER_SIZE];
      ResponseMetadata response = new ResponseMetadata();
      int outstanding = GREEDY_OUTSTANDING;
      try {
        while (outstanding > 0) {
          in.readFully(header);
          ByteBuf h = Unpooled.wrappedBuffer(header);
          int type = Frame.type(h);
          in.skipNBytes(Frame.payloadLength(h));
          if (type != Frame.TYPE_RESPONSE) {
            controlFrames.incrementAndGet(); // explicit credits or revocations: ignored
            continue;
          }
          Frame.readResponse(h, response);
          switch (response.status()) {
            case OK -> served.incrementAndGet();
            case REJECTED_NO_CREDIT -> refusedForCredit.incrementAndGet();
            default -> refusedOther.incrementAndGet();
          }
          if (stop) {
            outstanding--;
          } else {
            if (resendNanos > 0) {
              LockSupport.parkNanos(resendNanos);
            }
            send();
            out.flush();
          }
        }
      } catch (IOException e) {
        failure = e; // the connection closed under it: nothing more to count
      } finally {
        drained.countDown();
      }
    }

    /** Answers it has had, served or refused. */
    long answered() {
      return served.get() + refusedForCredit.get() + refusedOther.get();
    }

    /** Stops resending: each answer from now on takes one request out of flight. */
    void stop() {
      stop = true;
    }

    /** After {@link #stop()}: waits until every request it sent has been answered. */
    void awaitDrained() throws InterruptedException {
      drained.await();
    }

    /** {@link #awaitDrained()} with a bound; false if it passed first. */
    boolean awaitDrained(long timeout, TimeUnit unit) throws InterruptedException {
      return drained.await(timeout, unit);
    }

    /** Why its connection closed before it was drained, or null. */
    IOException failure() {
      return failure;
    }

    @Override
    public void close() throws IOException {
      stop = true;
      socket.close();
    }
  }
}
