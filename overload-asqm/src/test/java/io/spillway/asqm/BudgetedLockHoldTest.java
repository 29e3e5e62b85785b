package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.asqm.BudgetedLockTest.Worker;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Error paths of {@link BudgetedLock}'s try-with-resources handle. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BudgetedLockHoldTest {

  final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 100);

  /**
   * A hold closed by a thread that does not own it is refused, as {@code unlock()} is, and stays
   * the owner's to release: otherwise the owner's own close is a no-op and the lock is held
   * forever.
   */
  @Test
  void aCloseByAnotherThreadIsRefusedAndTheOwnerCanStillRelease() {
    BudgetedLock lock = new BudgetedLock(now::get);
    BudgetedLock.Held held = lock.acquire();
    Worker<Void> stranger = new Worker<>(() -> {
      held.close();
      return null;
    });
    Await.join(stranger.thread);
    assertInstanceOf(IllegalMonitorStateException.class, stranger.failure.get());
    assertTrue(lock.isHeldByCurrentThread());

    held.close();
    assertFalse(lock.isLocked(), "the owner's close released the lock");
  }
}
