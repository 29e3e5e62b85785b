package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.credit.Spillway;
import io.spillway.transport.Frame;
import io.spillway.transport.OverloadRejectedException;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A client that ignores its credit window, on real sockets: beside honest {@link SpillwayClient}
 * sessions against a {@link SpillwayServer} with the default scheme ({@link Spillway}), a raw
 * connection whose one session keeps {@value #GREEDY_OUTSTANDING} requests in flight whatever it is
 * granted: it sends them in one write (the first registers the session, which holds one credit
 * then), and resends at once on each answer, served or refused, reporting no demand.
 *
 * <p>Four measured windows of the same length, back to back after a warm-up: the honest sessions
 * alone; with the greedy session beside them; with, instead, an honest session of the same appetite
 * (through its gate, on a connection of its own: the yardstick the admission contract uses); alone
 * again. Printed as an {@code ABUSE-ROW} line (the row of docs/results/reliability.md): what the
 * greedy session was served against the same-appetite honest one, the best and the median honest
 * session, and the honest sessions' goodput (served within the SLO, counted from the call) in each
 * window. Those are shares of two cores the load generators share with the server, so they are
 * printed, not asserted. Asserted, as behaviour: every admitted request ends exactly once (a
 * {@link io.spillway.api.testing.LeakCheckingServerGate}), no honest call is lost, fails or ends
 * twice, and an honest session is never refused for credit.
 *
 * <p>{@code -Dspillway.abuse.seconds=N} sets the length of each window (default 3);
 * {@code -Dspillway.abuse.resendMicros=N} makes the greedy session wait that long before each
 * resend (default 0), to weigh what answering its refusals costs the server.
 */
class SocketAbuseTest {

  private static final long SLO_NANOS = 10_000_000;
  private static final long SERVICE_NANOS = 50_000;
  private static final int HONEST_SESSIONS = 8;
  private static final int HONEST_OUTSTANDING = 16;
  private static final int GREEDY_OUTSTANDING = 16;
  private static final long GREEDY_SESSION = 1_000_000;
  /** How long the greedy session waits before resending (0: at once, the default). */
  private static final long RESEND_NANOS =
      TimeUnit.MICROSECONDS.toNanos(Long.getLong("spillway.abuse.resendMicros", 0));
  private static final long WINDOW_NANOS =
      TimeUnit.SECONDS.toNanos(Long.getLong("spillway.abuse.seconds", 3));

  private static byte[] payload() {
    return ByteBuffer.allocate(8).putLong(SERVICE_NANOS).array();
  }

  /**
   * Honest sessions, each keeping {@link #HONEST_OUTSTANDING} calls issued through its gate; a call
   * that ends is replaced. Counts per session the calls served, and those served within the SLO.
   */
  private static final class Honest {
    final AtomicLongArray served;
    final AtomicLongArray good;
    final AtomicLong issued = new AtomicLong();
    final AtomicLong ended = new AtomicLong();
    final AtomicLong endedTwice = new AtomicLong();
    final Map<Status, AtomicLong> refused = new java.util.concurrent.ConcurrentHashMap<>();
    final AtomicLong failed = new AtomicLong();
    final AtomicBoolean stop = new AtomicBoolean();
    private final CountDownLatch allEnded = new CountDownLatch(1);
    private final byte[] payload = payload();

    Honest(SpillwayClient client) {
      served = new AtomicLongArray(client.sessionCount());
      good = new AtomicLongArray(client.sessionCount());
      for (int s = 0; s < client.sessionCount(); s++) {
        for (int i = 0; i < HONEST_OUTSTANDING; i++) {
          next(client.session(s), s);
        }
      }
    }

    private void next(SpillwayClient.Session session, int index) {
      if (stop.get()) {
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
        if (cause == null) {
          served.incrementAndGet(index);
          if (System.nanoTime() - start <= SLO_NANOS) {
            good.incrementAndGet(index);
          }
          next(session, index); // issued before this one counts as ended: see stopAndDrain
        } else if (cause instanceof OverloadRejectedException rejected) {
          refused.computeIfAbsent(rejected.status(), k -> new AtomicLong()).incrementAndGet();
          next(session, index);
        } else {
          failed.incrementAndGet();
        }
        if (ended.incrementAndGet() == issued.get() && stop.get()) {
          allEnded.countDown();
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

    /** Stops replacing calls and waits until every call issued has ended. */
    void stopAndDrain() throws InterruptedException {
      stop.set(true);
      if (ended.get() == issued.get()) {
        allEnded.countDown(); // the last one ended before the stop was seen
      }
      assertTrue(allEnded.await(30, TimeUnit.SECONDS),
          "every honest call ends: issued " + issued + ", ended " + ended);
    }
  }

  /**
   * The session that ignores its window, on a connection of its own: sends
   * {@link #GREEDY_OUTSTANDING} requests at once (the first registers the session) and one more
   * whenever an answer arrives, credit or not. Blocking socket I/O on one platform thread.
   */
  private static final class Greedy implements AutoCloseable {
    final AtomicLong served = new AtomicLong();
    final AtomicLong refusedForCredit = new AtomicLong();
    final AtomicLong refusedOther = new AtomicLong();
    final AtomicLong controlFrames = new AtomicLong();
    private final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;
    private final byte[] payload = payload();
    private final CountDownLatch drained = new CountDownLatch(1);
    private volatile boolean stop;
    private long requestId;
    private final Thread reader;

    /** CPU time of the thread that reads its answers and resends, in nanoseconds. */
    long cpuNanos() {
      return java.lang.management.ManagementFactory.getThreadMXBean().getThreadCpuTime(reader.threadId());
    }

    Greedy(int port) throws IOException {
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

    private void frame(ByteBuf buf, boolean register) {
      Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(GREEDY_SESSION)
          .requestId(++requestId).flags(register ? RequestMetadata.FLAG_REGISTER : 0),
          payload.length);
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
            if (RESEND_NANOS > 0) {
              LockSupport.parkNanos(RESEND_NANOS); // a paced variant, to weigh the refusals' cost
            }
            send();
            out.flush();
          }
        }
      } catch (IOException e) {
        // the connection closed under it: nothing more to count
      } finally {
        drained.countDown();
      }
    }

    /** Stops resending and waits until every request it sent has been answered. */
    void stopAndDrain() throws InterruptedException {
      stop = true;
      assertTrue(drained.await(30, TimeUnit.SECONDS), "the greedy session's requests are answered");
    }

    @Override
    public void close() throws IOException {
      stop = true;
      socket.close();
    }
  }

  /** What one measured window saw. */
  private record Window(long[] honestServed, long honestGood, long besideServed, long cpuNanos) {
    long best() {
      return Arrays.stream(honestServed).max().orElse(0);
    }

    long median() {
      long[] sorted = honestServed.clone();
      Arrays.sort(sorted);
      return (sorted[(sorted.length - 1) / 2] + sorted[sorted.length / 2]) / 2;
    }
  }

  /**
   * One window of load: what the honest sessions and, beside them, session 1,000,000 (greedy, or
   * honest with the same appetite, or absent) were served in it.
   */
  private static Window measure(Honest honest, LongSupplier beside) throws InterruptedException {
    long[] servedBefore = honest.servedNow();
    long goodBefore = honest.goodNow();
    long besideBefore = beside.getAsLong();
    long cpuBefore = processCpuNanos();
    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(WINDOW_NANOS)); // the window is a span of load
    long[] served = honest.servedNow();
    for (int i = 0; i < served.length; i++) {
      served[i] -= servedBefore[i];
    }
    return new Window(served, honest.goodNow() - goodBefore, beside.getAsLong() - besideBefore,
        processCpuNanos() - cpuBefore);
  }

  /** CPU time of this JVM (server, clients and all), in nanoseconds. */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
        java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  @Test
  void aClientIgnoringItsWindowBesideHonestSessions() throws Exception {
    LeakCheckingScheme scheme = new LeakCheckingScheme(Spillway.forSloNanos(SLO_NANOS));
    Window alone;
    Window beside;
    Window besideHonest;
    Window aloneAgain;
    Greedy greedy;
    Honest honest;
    Honest heavy;
    long greedyCpu;
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(1)
        .handler(HarnessServer::spin).build().start();
        SpillwayClient client = SpillwayClient.builder().scheme(Spillway.forSloNanos(SLO_NANOS))
            .port(server.port()).connections(HONEST_SESSIONS).sessions(HONEST_SESSIONS).sloNanos(SLO_NANOS)
            .build().start()) {
      honest = new Honest(client);
      Thread.sleep(6_000); // warm-up: the JIT and the credit pool settle
      alone = measure(honest, () -> 0);
      try (Greedy g = new Greedy(server.port())) {
        greedy = g;
        long cpuBefore = g.cpuNanos();
        beside = measure(honest, g.served::get);
        greedyCpu = g.cpuNanos() - cpuBefore;
        g.stopAndDrain();
      }
      // the yardstick: the same appetite through an honest client's gate, on its own connection
      try (SpillwayClient one = SpillwayClient.builder().scheme(Spillway.forSloNanos(SLO_NANOS))
          .port(server.port()).sessions(1).firstSessionId(GREEDY_SESSION + 1).sloNanos(SLO_NANOS)
          .build().start()) {
        heavy = new Honest(one);
        besideHonest = measure(honest, () -> heavy.served.get(0));
        heavy.stopAndDrain();
      }
      aloneAgain = measure(honest, () -> 0);
      honest.stopAndDrain();
    }
    double seconds = WINDOW_NANOS / 1e9;
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("scheme", "spillway");
    row.put("seconds", WINDOW_NANOS / 1_000_000_000);
    row.put("resendMicros", RESEND_NANOS / 1_000);
    row.put("greedyServed", beside.besideServed());
    row.put("greedyRefusedForCredit", greedy.refusedForCredit.get());
    row.put("greedyRefusedOther", greedy.refusedOther.get());
    row.put("sameAppetiteHonestServed", besideHonest.besideServed());
    row.put("honestBest", beside.best());
    row.put("honestMedian", beside.median());
    row.put("honestMedianBesideHonest", besideHonest.median());
    row.put("greedyOverMedian", String.format(java.util.Locale.ROOT, "%.2f",
        (double) beside.besideServed() / Math.max(1, beside.median())));
    row.put("honestGoodRpsBesideGreedy", Math.round(beside.honestGood() / seconds));
    row.put("honestGoodRpsBesideHonest", Math.round(besideHonest.honestGood() / seconds));
    row.put("honestGoodRpsAlone", Math.round(alone.honestGood() / seconds));
    row.put("honestGoodRpsAloneAfter", Math.round(aloneAgain.honestGood() / seconds));
    row.put("cpuCoresAloneBesideGreedyBesideHonest", String.format(java.util.Locale.ROOT,
        "%.2f/%.2f/%.2f", alone.cpuNanos() / 1e9 / seconds, beside.cpuNanos() / 1e9 / seconds,
        besideHonest.cpuNanos() / 1e9 / seconds));
    row.put("greedyThreadCpuCores", String.format(java.util.Locale.ROOT, "%.2f", greedyCpu / 1e9 / seconds));
    row.put("honestRefused", honest.refused.entrySet().stream()
        .map(e -> e.getKey() + ":" + e.getValue()).collect(Collectors.joining(",", "{", "}")));
    row.put("honestFailed", honest.failed.get() + heavy.failed.get());
    row.put("lost", honest.issued.get() - honest.ended.get() + heavy.issued.get() - heavy.ended.get());
    row.put("endedTwice", honest.endedTwice.get() + heavy.endedTwice.get());
    System.out.println("ABUSE-ROW greedy-socket " + row.entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" ")));

    for (Honest h : new Honest[] {honest, heavy}) {
      assertEquals(h.issued.get(), h.ended.get(), "every honest call ends");
      assertEquals(0, h.endedTwice.get());
      assertEquals(0, h.failed.get(), "no honest call failed with its connection");
      assertEquals(null, h.refused.get(Status.REJECTED_NO_CREDIT),
          "an honest session is never refused for credit");
    }
    assertEquals(0, scheme.checker().outstanding(), "every admitted request ended");
    scheme.checker().assertNoLeaks();
    assertTrue(beside.honestGood() > 0 && alone.honestGood() > 0, "the honest sessions were served");
  }
}
