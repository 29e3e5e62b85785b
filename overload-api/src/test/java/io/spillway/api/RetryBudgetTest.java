package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RetryBudgetTest {

  @Test
  void startsFullAndSpendsOneWholeTokenPerRetry() {
    RetryBudget b = RetryBudget.of(0.1);
    assertEquals(10_000, b.thousandths());
    for (int i = 0; i < 10; i++) {
      assertTrue(b.tryRetry(), "retry " + i);
    }
    assertEquals(0, b.thousandths());
    assertFalse(b.tryRetry(), "no token left");
    assertEquals(0, b.thousandths(), "a refused retry spends nothing");
  }

  @Test
  void aShareOfATenthEarnsOneRetryEveryTenCallsExactly() {
    RetryBudget b = RetryBudget.of(0.1, 1);
    assertTrue(b.tryRetry());
    for (int i = 0; i < 9; i++) {
      b.onCall();
    }
    assertEquals(900, b.thousandths());
    assertFalse(b.tryRetry(), "9 calls earn 0.9 of a token");
    b.onCall();
    assertEquals(1_000, b.thousandths(), "ten tenths make exactly one token");
    assertTrue(b.tryRetry());
    assertFalse(b.tryRetry());
  }

  @Test
  void neverKeepsMoreThanTheMaximum() {
    RetryBudget b = RetryBudget.of(0.3, 2);
    assertEquals(2_000, b.thousandths());
    b.onCall();
    assertEquals(2_000, b.thousandths(), "full: a call adds nothing");
    assertTrue(b.tryRetry());
    b.onCall();
    b.onCall();
    b.onCall();
    b.onCall();
    assertEquals(2_000, b.thousandths(), "1000 + 4 x 300 capped at 2000");
  }

  /** Over a long run with every call rejected, retries stay within share × calls + the bucket. */
  @Test
  void retriesStayWithinTheShareOverALongRun() {
    RetryBudget b = RetryBudget.of(0.1);
    int retries = 0;
    for (int call = 0; call < 10_000; call++) {
      b.onCall();
      if (b.tryRetry()) {
        retries++;
      }
    }
    // the first 11 calls retry (the 10 tokens kept, plus the tenths calls 2 to 11 add; call 1's
    // tenth is lost, the bucket being full), then calls 21, 31, ..., 9991: one in ten, 998
    assertEquals(1_009, retries);
  }

  @Test
  void onlyTheFirstAttemptAndOnlyAFastRejectMayRetry() {
    assertTrue(RetryBudget.isRetryable(Status.REJECTED_BUDGET, 0));
    assertTrue(RetryBudget.isRetryable(Status.REJECTED_AQM, 0));
    assertTrue(RetryBudget.isRetryable(Status.REJECTED_NO_CREDIT, 0));
    assertTrue(RetryBudget.isRetryable(Status.EXPIRED, 0), "a local failure message (Protego §5.3)");
    assertFalse(RetryBudget.isRetryable(Status.REJECTED_BUDGET, 1), "at most one retry");
    assertFalse(RetryBudget.isRetryable(Status.OK, 0));
    assertFalse(RetryBudget.isRetryable(Status.FAILED, 0), "the request may have run");
    assertFalse(RetryBudget.isRetryable(Status.TIMED_OUT, 0), "not a fast reject");
  }

  @Test
  void rejectsSharesOutsideTheUnitIntervalAndEmptyBuckets() {
    assertThrows(IllegalArgumentException.class, () -> RetryBudget.of(0));
    assertThrows(IllegalArgumentException.class, () -> RetryBudget.of(1.5));
    assertThrows(IllegalArgumentException.class, () -> RetryBudget.of(Double.NaN));
    assertThrows(IllegalArgumentException.class, () -> RetryBudget.of(0.1, 0));
  }

  /** Threads racing for the last tokens never spend more than there were. */
  @Test
  void concurrentRetriesNeverOverspend() throws Exception {
    RetryBudget b = RetryBudget.of(0.5, 3);
    AtomicInteger granted = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    Thread[] threads = new Thread[4];
    for (int i = 0; i < threads.length; i++) {
      threads[i] = Thread.ofPlatform().start(() -> {
        try {
          start.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int k = 0; k < 1_000; k++) {
          if (b.tryRetry()) {
            granted.incrementAndGet();
          }
        }
      });
    }
    start.countDown();
    for (Thread t : threads) {
      t.join();
    }
    assertEquals(3, granted.get());
    assertEquals(0, b.thousandths());
  }
}
