package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** The server's credit streams: every stream opened is ended when the application stops. */
class HttpCreditStreamsTest {

  /** A stream that records whether the server ended it. */
  private static final class Recorded implements HttpCreditStreams.Stream {
    final AtomicBoolean ended = new AtomicBoolean();

    @Override
    public void send(int endpoint, int creditDelta) { }

    @Override
    public void end() {
      ended.set(true);
    }
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
    ConcurrentHashMap<Long, HttpCreditStreams.Stream> map = new ConcurrentHashMap<>() {
      @Override
      public HttpCreditStreams.Stream put(Long key, HttpCreditStreams.Stream value) {
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
    boolean opened = streams.open(7, stream);
    stopping[0].join();
    if (opened) {
      assertThat(stream.ended).as("a stream opened before endAll took effect is ended").isTrue();
    }
    assertThat(streams.open()).isZero();
    assertThat(streams.open(8, new Recorded())).as("none opens once stopped").isFalse();
  }
}
