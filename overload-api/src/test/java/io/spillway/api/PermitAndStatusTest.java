package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class PermitAndStatusTest {

  private static final class CountingPermit extends AbstractServerPermit {
    final AtomicInteger completions = new AtomicInteger();

    CountingPermit(Status status) {
      super(status);
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      completions.incrementAndGet();
      response.creditDelta(7);
    }
  }

  @Test
  void completesExactlyOnce() {
    CountingPermit p = new CountingPermit(Status.OK);
    ResponseMetadata r = new ResponseMetadata();
    assertFalse(p.isCompleted());
    p.complete(Outcome.SUCCESS, 0, r);
    assertTrue(p.isCompleted());
    assertEquals(Status.OK, r.status());
    assertEquals(7, r.creditDelta());
    assertThrows(IllegalStateException.class, () -> p.complete(Outcome.SUCCESS, 0, new ResponseMetadata()));
    assertEquals(1, p.completions.get());
  }

  @Test
  void aCompletionWithoutAResponseLeavesThePermitOpen() {
    CountingPermit p = new CountingPermit(Status.OK);
    assertThrows(NullPointerException.class, () -> p.complete(Outcome.SUCCESS, 0, null));
    assertFalse(p.isCompleted(), "a failed call must not use up the one completion");
    assertEquals(0, p.completions.get());
    p.complete(Outcome.SUCCESS, 0, new ResponseMetadata());
    assertEquals(1, p.completions.get(), "so the scheme's onComplete still runs");
  }

  @Test
  void aRejectedPermitEndsOnlyAsDropped() {
    CountingPermit p = new CountingPermit(Status.REJECTED_AQM);
    assertFalse(p.isAdmitted());
    assertThrows(IllegalArgumentException.class, () -> p.complete(Outcome.SUCCESS, 0, new ResponseMetadata()));
    ResponseMetadata r = new ResponseMetadata();
    p.complete(Outcome.DROPPED, 0, r);
    assertEquals(Status.REJECTED_AQM, r.status());
  }

  @Test
  void outcomesMapToStatuses() {
    for (Outcome o : Outcome.values()) {
      ResponseMetadata r = new ResponseMetadata();
      new CountingPermit(Status.OK).complete(o, 0, r);
      Status expected = switch (o) {
        case SUCCESS -> Status.OK;
        case DROPPED -> Status.REJECTED_AQM;
        case ABORTED -> Status.REJECTED_BUDGET;
        case TIMED_OUT -> Status.TIMED_OUT;
        case FAILED -> Status.FAILED;
      };
      assertEquals(expected, r.status(), o.name());
    }
  }

  @Test
  void statusCodesRoundTrip() {
    for (Status s : Status.values()) {
      assertEquals(s, Status.fromCode(s.code()));
    }
    assertThrows(IllegalArgumentException.class, () -> Status.fromCode(99));
    assertTrue(Status.REJECTED_PRICE.isShed());
    assertFalse(Status.FAILED.isShed());
  }
}
