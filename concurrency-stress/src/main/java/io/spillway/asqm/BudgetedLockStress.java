package io.spillway.asqm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * jcstress tests of {@link BudgetedLock} and its {@link WaiterLine}, the waiter queue whose oldest
 * stamp is the lock's queueing delay (protego-nsdi23 §4, "Queueing delay measurement"). Readers of
 * the line take no lock: a join or leave publishes the oldest stamp and the size together as one
 * immutable head, and a reader must never see one state's stamp with another's size. The lock
 * itself must exclude, and a waiter that gives up must leave the line whatever the holder does
 * meanwhile, or the lock reports a queue that is not there and refuses every budgeted request.
 */
public final class BudgetedLockStress {

  private BudgetedLockStress() {}

  /** A reader of the line's head while a waiter joins and leaves. */
  @JCStressTest
  @Description("WaiterLine's head read while a waiter joins and leaves")
  @Outcome(id = "0, 0", expect = Expect.ACCEPTABLE, desc = "read before the join or after the leave")
  @Outcome(id = "1, 10", expect = Expect.ACCEPTABLE, desc = "read while the waiter waits")
  @Outcome(expect = Expect.FORBIDDEN, desc = "a size with another state's stamp")
  @State
  public static class HeadReadWhileAWaiterComesAndGoes {
    private final WaiterLine line = new WaiterLine();

    @Actor
    public void waiter() {
      line.leave(line.join(10));
    }

    @Actor
    public void reader(II_Result r) {
      WaiterLine.Head head = line.head();
      r.r1 = head.size();
      r.r2 = (int) head.oldestStamp();
    }
  }

  /**
   * Two joins racing, the later stamp possibly first: the head is the oldest stamp once both are
   * in, and the line is empty once both leave.
   */
  @JCStressTest
  @Description("Two waiters join in either order; the head is the oldest")
  @Outcome(id = "10, 2, 0", expect = Expect.ACCEPTABLE, desc = "oldest at the head; empty after")
  @Outcome(expect = Expect.FORBIDDEN, desc = "the head is not the oldest, or the line did not empty")
  @State
  public static class RacingJoins {
    private final WaiterLine line = new WaiterLine();
    private WaiterLine.Waiter late;
    private WaiterLine.Waiter early;

    @Actor
    public void joinLate() {
      late = line.join(20);
    }

    @Actor
    public void joinEarly() {
      early = line.join(10);
    }

    @Arbiter
    public void check(III_Result r) {
      WaiterLine.Head head = line.head();
      r.r1 = (int) head.oldestStamp();
      r.r2 = head.size();
      line.leave(late);
      line.leave(early);
      r.r3 = line.head().size() + (int) line.head().oldestStamp();
    }
  }

  /** A plain counter incremented under {@code lock} and under {@code lockIfUncongested}. */
  @JCStressTest
  @Description("lock and lockIfUncongested exclude each other")
  @Outcome(id = "2, 0, 0", expect = Expect.ACCEPTABLE, desc = "both increments; the lock free, no waiter")
  @Outcome(expect = Expect.FORBIDDEN, desc = "a lost update, a waiter left behind, or the lock held")
  @State
  public static class MutualExclusion {
    private final BudgetedLock lock = new BudgetedLock();
    private int counter;

    @Actor
    public void locking() {
      lock.lock();
      try {
        counter++;
      } finally {
        lock.unlock();
      }
    }

    @Actor
    public void ifUncongested() {
      if (lock.lockIfUncongested()) { // no budget in scope: it waits as lock() does
        try {
          counter++;
        } finally {
          lock.unlock();
        }
      }
    }

    @Arbiter
    public void check(III_Result r) {
      r.r1 = counter;
      r.r2 = lock.waiters();
      r.r3 = lock.isLocked() ? 1 : 0;
    }
  }

  /**
   * Two timed acquisitions of about the time the lock is held: whoever comes second waits in the
   * line and either gets the lock as the first releases it or gives up as it does. Either way it
   * leaves the line, so no waiter and no queueing delay remain, and at least one of them got in.
   */
  @JCStressTest
  @Description("Timed tryLocks whose timeouts race the holder's unlock")
  @Outcome(id = "1, 1, 0", expect = Expect.ACCEPTABLE, desc = "both got in; nothing left behind")
  @Outcome(id = "1, 0, 0", expect = Expect.ACCEPTABLE, desc = "the second gave up; nothing left behind")
  @Outcome(id = "0, 1, 0", expect = Expect.ACCEPTABLE, desc = "the first gave up; nothing left behind")
  @Outcome(expect = Expect.FORBIDDEN, desc = "a waiter or a queueing delay left behind, the lock "
      + "held, or neither got in")
  @State
  public static class TimedWaitsAgainstUnlock {
    private static final int HOLD_SPINS = 150;
    private final BudgetedLock lock = new BudgetedLock();

    private int attempt() {
      boolean acquired;
      try {
        acquired = lock.tryLock(1, TimeUnit.MICROSECONDS);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      if (!acquired) {
        return 0;
      }
      for (int i = 0; i < HOLD_SPINS; i++) {
        Thread.onSpinWait(); // held a while, so the other may time out as this one unlocks
      }
      lock.unlock();
      return 1;
    }

    @Actor
    public void first(III_Result r) {
      r.r1 = attempt();
    }

    @Actor
    public void second(III_Result r) {
      r.r2 = attempt();
    }

    @Arbiter
    public void check(III_Result r) {
      r.r3 = lock.waiters() + (lock.queueingDelayNanos(System.nanoTime()) > 0 ? 100 : 0)
          + (lock.isLocked() ? 1000 : 0);
    }
  }
}
