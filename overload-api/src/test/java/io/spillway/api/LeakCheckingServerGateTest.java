package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.testing.LeakCheckingServerGate;
import org.junit.jupiter.api.Test;

class LeakCheckingServerGateTest {

  /** Admits every request with the status it is built with; permits are plain. */
  private static ServerGate gate(Status decision) {
    return new ServerGate() {
      @Override
      public ServerPermit admit(RequestMetadata request, long nowNanos) {
        return new AbstractServerPermit(decision) {
          @Override
          protected void onComplete(Outcome outcome, long now, ResponseMetadata response) { }
        };
      }

      @Override
      public void deregister(long sessionId, long nowNanos) { }
    };
  }

  /** A scheme's buggy permit that accepts a second completion without throwing. */
  private static ServerGate lenientGate() {
    return new ServerGate() {
      @Override
      public ServerPermit admit(RequestMetadata request, long nowNanos) {
        return new ServerPermit() {
          boolean completed;

          @Override
          public boolean isAdmitted() {
            return true;
          }

          @Override
          public Status status() {
            return Status.OK;
          }

          @Override
          public void complete(Outcome outcome, long now, ResponseMetadata response) {
            completed = true;
          }

          @Override
          public boolean isCompleted() {
            return completed;
          }
        };
      }

      @Override
      public void deregister(long sessionId, long nowNanos) { }
    };
  }

  @Test
  void reportsAPermitNeverCompleted() {
    LeakCheckingServerGate checker = new LeakCheckingServerGate(gate(Status.OK));
    checker.admit(new RequestMetadata().sessionId(3).requestId(9), 0)
        .complete(Outcome.SUCCESS, 0, new ResponseMetadata());
    checker.admit(new RequestMetadata().sessionId(3).requestId(10), 0);
    assertEquals(1, checker.outstanding());
    AssertionError e = assertThrows(AssertionError.class, checker::assertNoLeaks);
    assertTrue(e.getMessage().contains("request 10"), e.getMessage());
  }

  @Test
  void reportsAPermitCompletedTwice() {
    LeakCheckingServerGate checker = new LeakCheckingServerGate(gate(Status.OK));
    ServerPermit p = checker.admit(new RequestMetadata().sessionId(3).requestId(9), 0);
    p.complete(Outcome.SUCCESS, 0, new ResponseMetadata());
    assertThrows(IllegalStateException.class,
        () -> p.complete(Outcome.TIMED_OUT, 0, new ResponseMetadata()));
    AssertionError e = assertThrows(AssertionError.class, checker::assertNoLeaks);
    assertTrue(e.getMessage().contains("completed twice"), e.getMessage());
  }

  @Test
  void reportsASecondCompletionThePermitItselfAccepted() {
    LeakCheckingServerGate checker = new LeakCheckingServerGate(lenientGate());
    ServerPermit p = checker.admit(new RequestMetadata().sessionId(3).requestId(9), 0);
    p.complete(Outcome.SUCCESS, 0, new ResponseMetadata());
    p.complete(Outcome.SUCCESS, 0, new ResponseMetadata());
    AssertionError e = assertThrows(AssertionError.class, checker::assertNoLeaks);
    assertTrue(e.getMessage().contains("completed twice"), e.getMessage());
  }

  /**
   * A completion the permit refuses (a rejected request ended as SUCCESS) leaves it open, as
   * {@link AbstractServerPermit#complete} documents: if nothing completes it afterwards it has
   * leaked, and the checker must say so.
   */
  @Test
  void aRefusedCompletionLeavesThePermitOpenAndLeaking() {
    LeakCheckingServerGate checker = new LeakCheckingServerGate(gate(Status.REJECTED_AQM));
    ServerPermit p = checker.admit(new RequestMetadata().sessionId(3).requestId(9), 0);
    assertThrows(IllegalArgumentException.class,
        () -> p.complete(Outcome.SUCCESS, 0, new ResponseMetadata()));
    assertEquals(1, checker.outstanding(), "the permit is still open");
    assertThrows(AssertionError.class, checker::assertNoLeaks, "a permit never completed");
  }

  /** ... and the caller completing it properly afterwards is its one completion, not a second. */
  @Test
  void aPermitCompletedAfterARefusedCompletionIsCompletedOnce() {
    LeakCheckingServerGate checker = new LeakCheckingServerGate(gate(Status.OK));
    ServerPermit p = checker.admit(new RequestMetadata().sessionId(3).requestId(9), 0);
    assertThrows(NullPointerException.class, () -> p.complete(Outcome.SUCCESS, 0, null));
    p.complete(Outcome.SUCCESS, 0, new ResponseMetadata());
    checker.assertNoLeaks();
    assertEquals(0, checker.outstanding());
  }

  /**
   * A permit whose scheme's completion threw after the permit took it is completed (its one
   * completion was used), not leaked; a retry is its second completion.
   */
  @Test
  void aPermitWhoseSchemeFailedOnCompletionIsCompletedNotLeaked() {
    LeakCheckingServerGate checker = new LeakCheckingServerGate(new ServerGate() {
      @Override
      public ServerPermit admit(RequestMetadata request, long nowNanos) {
        return new AbstractServerPermit(Status.OK) {
          @Override
          protected void onComplete(Outcome outcome, long now, ResponseMetadata response) {
            throw new IllegalStateException("a metrics callback failed");
          }
        };
      }

      @Override
      public void deregister(long sessionId, long nowNanos) { }
    });
    ServerPermit p = checker.admit(new RequestMetadata().sessionId(3).requestId(9), 0);
    assertThrows(IllegalStateException.class,
        () -> p.complete(Outcome.SUCCESS, 0, new ResponseMetadata()));
    assertEquals(0, checker.outstanding());
    checker.assertNoLeaks();
    assertThrows(IllegalStateException.class,
        () -> p.complete(Outcome.SUCCESS, 0, new ResponseMetadata()));
    AssertionError e = assertThrows(AssertionError.class, checker::assertNoLeaks);
    assertTrue(e.getMessage().contains("completed twice"), e.getMessage());
  }
}
