package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Refusals for credit answered after a hold, in virtual time (the class comment's rules). */
class CreditRefusalHoldsTest {

  private static final long ORIGIN = 0x2b;
  private static final long FIRST = CreditRefusalHolds.FIRST_HOLD_NANOS;
  private static final long MAX = CreditRefusalHolds.MAX_HOLD_NANOS;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private final CreditRefusalHolds holds = new CreditRefusalHolds(clock);
  private final List<String> answered = new ArrayList<>();

  private boolean refuse(long origin, String name) {
    return holds.hold(origin, () -> answered.add(name));
  }

  @Test
  void aRefusalIsAnsweredAfterTheFirstHoldAndNotBefore() {
    assertTrue(refuse(ORIGIN, "a"));
    clock.advance(FIRST - 1);
    assertEquals(List.of(), answered);
    clock.advance(1);
    assertEquals(List.of("a"), answered);
  }

  @Test
  void refusalsDuringAHoldJoinItAndTheNextHoldIsTwiceAsLong() {
    assertTrue(refuse(ORIGIN, "a"));
    clock.advance(FIRST / 2);
    assertTrue(refuse(ORIGIN, "b"));
    clock.advance(FIRST / 2);
    assertEquals(List.of("a", "b"), answered, "one hold, both answered at its end");

    assertTrue(refuse(ORIGIN, "c"));
    clock.advance(2 * FIRST - 1);
    assertEquals(2, answered.size());
    clock.advance(1);
    assertEquals(List.of("a", "b", "c"), answered);
  }

  @Test
  void holdsInARowDoubleUpToTheLongest() {
    long expected = FIRST;
    for (int i = 0; i < 20; i++) {
      answered.clear();
      assertTrue(refuse(ORIGIN, "r" + i));
      clock.advance(expected - 1);
      assertEquals(List.of(), answered, "hold " + i + " ended early");
      clock.advance(1);
      assertEquals(List.of("r" + i), answered, "hold " + i + " of " + expected + " ns");
      expected = Math.min(MAX, 2 * expected);
    }
    assertEquals(MAX, expected);
  }

  @Test
  void anAdmittedCallStartsTheHoldsAgainFromTheFirst() {
    for (int i = 0; i < 6; i++) {
      refuse(ORIGIN, "r" + i);
      clock.advance(MAX);
    }
    holds.admitted(ORIGIN);
    answered.clear();
    refuse(ORIGIN, "after");
    clock.advance(FIRST);
    assertEquals(List.of("after"), answered);
  }

  @Test
  void originsAreHeldApart() {
    for (int i = 0; i < 6; i++) {
      refuse(ORIGIN, "r" + i);
      clock.advance(MAX);
    }
    answered.clear();
    holds.admitted(0x4d); // another connection's admission resets nothing here
    refuse(0x4d, "other");
    refuse(ORIGIN, "flooder");
    clock.advance(FIRST);
    assertEquals(List.of("other"), answered);
    clock.advance(MAX);
    assertEquals(List.of("other", "flooder"), answered);
  }

  @Test
  void aFullHoldAnswersTheRestAtOnce() {
    for (int i = 0; i < CreditRefusalHolds.MAX_HELD_PER_ORIGIN; i++) {
      assertTrue(refuse(ORIGIN, "held"));
    }
    assertFalse(refuse(ORIGIN, "beyond"), "beyond the cap the caller answers at once");
    assertEquals(CreditRefusalHolds.MAX_HELD_PER_ORIGIN, holds.heldCalls());
    clock.advance(FIRST);
    assertEquals(CreditRefusalHolds.MAX_HELD_PER_ORIGIN, answered.size());
    assertEquals(0, holds.heldCalls());
  }

  @Test
  void aQuietOriginIsForgottenAndStartsAgainFromTheFirst() {
    for (int i = 0; i < 6; i++) {
      refuse(ORIGIN, "r" + i);
      clock.advance(MAX);
    }
    assertEquals(1, holds.origins());
    clock.advance(CreditRefusalHolds.FORGET_AFTER_NANOS);
    assertEquals(0, holds.origins(), "nothing is kept for a connection that stopped");
    assertEquals(0, clock.pendingTasks());
    answered.clear();
    refuse(ORIGIN, "back");
    clock.advance(FIRST);
    assertEquals(List.of("back"), answered);
  }

  @Test
  void beyondTheOriginsKeptARefusalIsAnsweredAtOnce() {
    for (int o = 1; o <= CreditRefusalHolds.MAX_ORIGINS; o++) {
      assertTrue(refuse(o, "o" + o));
    }
    assertFalse(refuse(CreditRefusalHolds.MAX_ORIGINS + 1, "one too many"));
    assertTrue(refuse(1, "a kept origin joins its hold"));
    clock.advance(FIRST);
    assertEquals(CreditRefusalHolds.MAX_ORIGINS + 1, answered.size());
  }

  @Test
  void anAnswerThatThrowsDoesNotStopTheOthers() {
    holds.hold(ORIGIN, () -> {
      throw new IllegalStateException("a closed call");
    });
    refuse(ORIGIN, "b");
    clock.advance(FIRST);
    assertEquals(List.of("b"), answered);
    assertEquals(0, holds.heldCalls());
  }
}
