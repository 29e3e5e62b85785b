package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Ticker;
import org.junit.jupiter.api.Test;

/** The arrival stage's mean, its staleness and its restart, in virtual time across a wrap. */
class TomcatArrivalValveTest {

  /** Near the end of the clock's range, so the readings cross the wrap-around. */
  private static final long T0 = Long.MAX_VALUE - 5_000_000;

  @Test
  void theMeanMovesAnEighthPerArrival() {
    TomcatArrivalValve stage = new TomcatArrivalValve(() -> T0);
    assertThat(stage.queueingDelayNanos(T0)).isZero(); // nothing arrived yet
    stage.record(8_000_000, T0);
    assertThat(stage.queueingDelayNanos(T0)).isEqualTo(8_000_000); // the first sets it
    stage.record(0, T0 + 1_000_000);
    assertThat(stage.queueingDelayNanos(T0 + 1_000_000)).isEqualTo(7_000_000);
    stage.record(16_000_000, T0 + 10_000_000); // past Long.MAX_VALUE
    assertThat(stage.queueingDelayNanos(T0 + 10_000_000)).isEqualTo(7_000_000 + 9_000_000 / 8);
  }

  @Test
  void aMeanWithNoRecentArrivalReadsZeroAndTheNextStartsItAfresh() {
    TomcatArrivalValve stage = new TomcatArrivalValve(Ticker.system());
    stage.record(12_000_000, T0);
    long stale = T0 + TomcatArrivalValve.STALE_NANOS + 1;
    assertThat(stage.queueingDelayNanos(T0 + TomcatArrivalValve.STALE_NANOS)).isEqualTo(12_000_000);
    assertThat(stage.queueingDelayNanos(stale)).isZero();
    stage.record(500_000, stale);
    assertThat(stage.queueingDelayNanos(stale)).isEqualTo(500_000); // not 12 ms less an eighth
  }
}
