package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;

/**
 * A credit stream whose client does not read: what the server holds for it stays one event per
 * gate however many credits are sent meanwhile, and once the client reads, what it gets adds up
 * to every delta sent and ends on the newest stamped window of each gate. On a servlet container
 * (a writer stuck on its socket) and on WebFlux (a subscriber that requests nothing).
 */
class UnreadCreditStreamsTest {

  private static final int CREDITS = 100_000;
  /** The high half of the stamps: one session record's. */
  private static final long RECORD = 7L << 32;

  /**
   * Sends {@link #CREDITS} credits of 1, alternately for gates 1 and 0, each stamped with a window
   * and a stamp one more than the last; then one of -1 for gate 0 whose stamp is older than the
   * newest (a message that lost a race), which adds its delta but not its window.
   */
  private static void sendAll(HttpCreditStreams.Stream stream) {
    for (int i = 1; i <= CREDITS; i++) {
      stream.send(i % 2, 1, i, RECORD | i);
    }
    stream.send(0, -1, 3, RECORD | 3);
  }

  /** What {@link #sendAll} amounts to per gate: the sum of its deltas, its newest window. */
  private static final Map<Integer, String> SENT = Map.of(
      0, (CREDITS / 2 - 1) + " after window: " + CREDITS + "/" + (RECORD | CREDITS),
      1, CREDITS / 2 + " after window: " + (CREDITS - 1) + "/" + (RECORD | CREDITS - 1));

  /**
   * Reads server-sent events as the client does: per gate, the sum of the deltas and the last
   * {@code window:} field an event carried.
   */
  private static Map<Integer, String> received(String stream) {
    Map<Integer, Long> sums = new HashMap<>();
    Map<Integer, String> windows = new HashMap<>();
    String window = null;
    for (String line : stream.split("\n", -1)) {
      if (line.isEmpty()) {
        window = null;
      } else if (line.startsWith("window: ")) {
        window = line;
      } else if (line.startsWith("data: ")) {
        String[] data = line.substring(6).split(" ");
        int gate = data.length == 1 ? 0 : Integer.parseInt(data[1]);
        sums.merge(gate, Long.parseLong(data[0]), Long::sum);
        if (window != null) {
          windows.put(gate, window);
        }
      }
    }
    Map<Integer, String> out = new HashMap<>();
    sums.forEach((gate, sum) -> out.put(gate, sum + " after " + windows.get(gate)));
    return out;
  }

  @Test
  void aServletStreamWhoseClientDoesNotReadHoldsOneEventPerGate() throws Exception {
    CountDownLatch stuck = new CountDownLatch(1);
    CountDownLatch reads = new CountDownLatch(1);
    ByteArrayOutputStream read = new ByteArrayOutputStream();
    OutputStream socket = new OutputStream() { // blocks until the client reads, as a full one
      @Override
      public void write(int b) {
        write(new byte[] {(byte) b}, 0, 1);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        stuck.countDown();
        try {
          reads.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        synchronized (read) {
          read.write(b, off, len);
        }
      }
    };
    CountDownLatch completed = new CountDownLatch(1);
    ServletCreditStream stream = new ServletCreditStream(9, socket, completed::countDown,
        new HttpCreditStreams(), new VirtualTimeServletFilter().gate);
    Thread writer = Thread.ofVirtual().start(stream);
    assertThat(stuck.await(30, TimeUnit.SECONDS)).as("the writer writes").isTrue();

    sendAll(stream);
    assertThat(stream.pendingEvents()).as("events held for a client that does not read")
        .isLessThanOrEqualTo(2);

    reads.countDown();
    stream.end();
    assertThat(writer.join(Duration.ofSeconds(30))).as("the writer ends").isTrue();
    assertThat(completed.getCount()).as("the request completed").isZero();
    String events;
    synchronized (read) {
      events = read.toString(StandardCharsets.US_ASCII);
    }
    assertThat(events).startsWith(": subscribed\n\n");
    assertThat(received(events)).isEqualTo(SENT);
  }

  @Test
  void aWebFluxStreamWhoseSubscriberRequestsNothingHoldsOneEventPerGate() {
    FluxCreditStream stream = new FluxCreditStream();
    StringBuilder read = new StringBuilder();
    AtomicBoolean completed = new AtomicBoolean();
    BaseSubscriber<byte[]> client = new BaseSubscriber<>() {
      @Override
      protected void hookOnSubscribe(Subscription subscription) { } // requests nothing yet

      @Override
      protected void hookOnNext(byte[] events) {
        read.append(new String(events, StandardCharsets.US_ASCII));
      }

      @Override
      protected void hookOnComplete() {
        completed.set(true);
      }
    };
    stream.events().subscribe(client);

    sendAll(stream);
    assertThat(read).as("nothing was asked for").isEmpty();
    assertThat(stream.pendingEvents()).as("events held for a subscriber that requests nothing")
        .isLessThanOrEqualTo(2);

    client.request(1);
    assertThat(received(read.toString())).as("one request takes all that waited")
        .isEqualTo(SENT);
    stream.end();
    assertThat(completed).as("completed once ended").isTrue();
  }

  /**
   * A stream ended (its session deregistered, or its stream replaced) while its subscriber asks
   * for nothing completes at once: what it had not sent is dropped with it, not kept for a client
   * that may never read.
   */
  @Test
  void aWebFluxStreamEndedWhileItsSubscriberRequestsNothingCompletes() {
    FluxCreditStream stream = new FluxCreditStream();
    AtomicBoolean completed = new AtomicBoolean();
    stream.events().subscribe(new BaseSubscriber<>() {
      @Override
      protected void hookOnSubscribe(Subscription subscription) { }

      @Override
      protected void hookOnComplete() {
        completed.set(true);
      }
    });
    stream.send(0, 1, 1, RECORD | 1);
    stream.end();
    assertThat(completed).isTrue();
    assertThat(stream.pendingEvents()).isZero();
  }
}
