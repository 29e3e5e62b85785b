package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The merge of a stream's unwritten credits, with literal numbers. */
class PendingCreditsTest {

  private static String take(PendingCredits p) {
    byte[] events = p.take();
    return events == null ? null : new String(events, StandardCharsets.US_ASCII);
  }

  @Test
  void deltasAddUpPerGateAndTheNewestStampIsKept() {
    PendingCredits p = new PendingCredits();
    p.add(0, 2, 5, 9);
    p.add(3, -1, 0, 0);
    p.add(0, 1, 6, 10);
    p.add(0, -1, 4, 8); // older than 10: its delta counts, its window does not
    assertThat(p.gates()).isEqualTo(2);
    assertThat(take(p)).isEqualTo("window: 6/10\ndata: 2\n\ndata: -1 3\n\n");
    assertThat(p.isEmpty()).isTrue();
    assertThat(take(p)).isNull();
  }

  /** Deltas that cancel out, unstamped, leave nothing to write. */
  @Test
  void deltasThatCancelOutLeaveNothing() {
    PendingCredits p = new PendingCredits();
    p.add(1, 1, 0, 0);
    p.add(1, -1, 0, 0);
    assertThat(p.isEmpty()).isTrue();
    assertThat(take(p)).isNull();
  }

  /**
   * A sum beyond an int goes in several events, the stamp on the last, so that a client that
   * takes the window from it applies no delta after it.
   */
  @Test
  void aSumBeyondAnIntGoesInSeveralEventsStampedLast() {
    PendingCredits p = new PendingCredits();
    p.add(0, Integer.MAX_VALUE, 1, 1);
    p.add(0, 2, 7, 2);
    assertThat(take(p)).isEqualTo("data: 2147483647\n\nwindow: 7/2\ndata: 2\n\n");
  }
}
