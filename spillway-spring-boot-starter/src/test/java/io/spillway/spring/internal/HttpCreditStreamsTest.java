package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The server's credit streams: what a gate's control channel writes on them, every stream
 * opened is ended when the application stops, and only its key acts for an open stream's session.
 */
class HttpCreditStreamsTest {

  /** A stream that records whether the server ended it. */
  private static class Recorded implements HttpCreditStreams.Stream {
    final AtomicBoolean ended = new AtomicBoolean();

    @Override
    public void send(int endpoint, int creditDelta, int window, long seq) { }

    @Override
    public void end() {
      ended.set(true);
    }
  }

  /**
   * A stamped credit carries the window and stamp in a {@code window:} field before its data, in
   * the text of the {@code Spillway-Credit-Window} header; an unstamped one is its data alone.
   */
  @Test
  void aStampedCreditCarriesItsWindowInTheEvent() {
    long seq = 0xFFFF_FFFF_0000_0003L;
    assertThat(new String(HttpCreditStreams.event(0, 2, 3, seq), StandardCharsets.US_ASCII))
        .isEqualTo("window: 3/-4294967293\ndata: 2\n\n");
    assertThat(new String(HttpCreditStreams.event(1, 0, 5, 9), StandardCharsets.US_ASCII))
        .isEqualTo("window: 5/9\ndata: 0 1\n\n");
    assertThat(new String(HttpCreditStreams.event(1, -1, 0, 0), StandardCharsets.US_ASCII))
        .isEqualTo("data: -1 1\n\n");
  }

  /** The gate's control channel hands the stream the stamp, or none for a delta alone. */
  @Test
  void theControlChannelPassesTheStampOn() {
    HttpCreditStreams streams = new HttpCreditStreams();
    List<String> sent = new ArrayList<>();
    streams.open(7, new Recorded() {
      @Override
      public void send(int endpoint, int creditDelta, int window, long seq) {
        sent.add(endpoint + " " + creditDelta + " " + window + " " + seq);
      }
    }, HttpCreditStreams.newKey(), null);
    streams.channel(2).sendCredit(7, 1, 4, 11);
    streams.channel(2).sendCredit(7, -1);
    streams.channel(0).sendCredit(8, 1, 1, 1); // no stream: dropped
    assertThat(sent).containsExactly("2 1 4 11", "2 -1 0 0");
  }

  /**
   * {@code endAll} runs on another thread just as {@code open} is about to put its stream, after
   * it found the streams not stopped: it either waits for the put and then ends the stream, or, if
   * it can run to its end first, the stream stays open for good. The map's put is where the test
   * lets {@code endAll} in; it waits until that thread has finished or is blocked, so the
   * interleaving does not depend on timing.
   */
  @Test
  void aStreamOpenedAsEveryStreamEndsIsEndedOrRefused() throws Exception {
    Thread[] stopping = new Thread[1];
    HttpCreditStreams[] self = new HttpCreditStreams[1];
    ConcurrentHashMap<Long, HttpCreditStreams.Bound> map = new ConcurrentHashMap<>() {
      @Override
      public HttpCreditStreams.Bound put(Long key, HttpCreditStreams.Bound value) {
        if (stopping[0] == null) {
          stopping[0] = Thread.ofPlatform().start(self[0]::endAll);
          Thread.State s;
          while ((s = stopping[0].getState()) != Thread.State.TERMINATED
              && s != Thread.State.BLOCKED && s != Thread.State.WAITING) {
            Thread.onSpinWait();
          }
        }
        return super.put(key, value);
      }
    };
    HttpCreditStreams streams = new HttpCreditStreams(map);
    self[0] = streams;
    Recorded stream = new Recorded();
    boolean opened = streams.open(7, stream, HttpCreditStreams.newKey(), null) == 200;
    stopping[0].join();
    if (opened) {
      assertThat(stream.ended).as("a stream opened before endAll took effect is ended").isTrue();
    }
    assertThat(streams.open()).isZero();
    assertThat(streams.open(8, new Recorded(), HttpCreditStreams.newKey(), null))
        .as("none opens once stopped").isEqualTo(503);
  }

  /**
   * While a session's stream is open, a demand report, a deregistration or another stream for
   * the session is taken only with the key the stream was opened with: without it, or with
   * another (a near miss included), it is refused and the stream stays open and the session's.
   * With none open, a deregistration needs no key, a demand report has nowhere to be answered,
   * and a stream opens.
   */
  @Test
  void whileAStreamIsOpenOnlyItsKeyActsForTheSession() {
    HttpCreditStreams streams = new HttpCreditStreams();
    io.spillway.spring.SpillwayHttpGate gate = new VirtualTimeServletFilter().gate;
    Recorded owner = new Recorded();
    String key = HttpCreditStreams.newKey();
    assertThat(key).matches("[0-9a-f]{32}");
    assertThat(streams.open(7, owner, key, null)).isEqualTo(200);
    String other = HttpCreditStreams.newKey();
    assertThat(other).isNotEqualTo(key);
    for (String forged : new String[] {null, "", other, key.substring(1), key + "0"}) {
      assertThat(streams.deregister(7, forged, gate)).as("DELETE %s", forged).isEqualTo(403);
      assertThat(streams.demand(7, "1", null, forged, gate)).as("POST %s", forged)
          .isEqualTo(403);
      assertThat(streams.open(7, new Recorded(), HttpCreditStreams.newKey(), forged))
          .as("GET %s", forged).isEqualTo(403);
    }
    assertThat(owner.ended).isFalse();
    assertThat(streams.open()).isEqualTo(1);

    // the owner's: a demand report, then a stream that replaces the first, then the end
    assertThat(streams.demand(7, "1", null, " " + key + " ", gate)).isEqualTo(204);
    Recorded second = new Recorded();
    String secondKey = HttpCreditStreams.newKey();
    assertThat(streams.open(7, second, secondKey, key)).isEqualTo(200);
    assertThat(owner.ended).isTrue();
    assertThat(streams.deregister(7, key, gate)).as("the replaced stream's key").isEqualTo(403);
    assertThat(second.ended).isFalse();
    assertThat(streams.deregister(7, secondKey, gate)).isEqualTo(204);
    assertThat(second.ended).isTrue();
    assertThat(streams.open()).isZero();

    assertThat(streams.deregister(7, null, gate)).isEqualTo(204);
    assertThat(streams.demand(7, "1", null, null, gate)).isEqualTo(409);
    assertThat(streams.open(7, new Recorded(), HttpCreditStreams.newKey(), null)).isEqualTo(200);
  }
}
