package io.spillway.asqm;

import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.datastructures.LongGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Model-checks {@link WaiterLine} with Lincheck against a sequential model, a multiset of stamps:
 * {@code queueingDelay(now) = max(0, now − min stamp)}, 0 when empty; {@code size} = its size.
 *
 * <p>Two groups of operations join small literal stamps (1..5) and leave only waiters their own
 * group joined (oldest or newest first, so waiters also leave from the middle of the line); each
 * group runs on one thread (Lincheck's {@code nonParallelGroup}), readers run on any thread.
 * Lincheck explores the interleavings of every scenario (model checking, bounded invocations) and
 * fails if no sequential order of the operations explains the results.
 *
 * <p>What holds (in every explored interleaving): {@code join}/{@code leave}/{@code size} are
 * linearizable, with three threads; {@code queueingDelayNanos} and {@code size} together are,
 * also across an empty line; {@code queueingDelayNanos} and the exact head stamp are while the
 * line never goes empty (a pinned waiter stamped 3, so joins go before and after it).
 *
 * <p>History: the first version of {@link WaiterLine} published the oldest stamp and the size as
 * two volatiles, and Lincheck found two non-linearizable histories (kept below as fixed
 * scenarios): a reader saw a joiner's stamp before its size, so a later {@code size()}, or a later
 * {@code queueingDelayNanos} after the line had emptied, contradicted it. The line now publishes
 * both as one immutable head.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-asqm test -Dtest='WaiterLineLincheckTest'}.
 */
class WaiterLineLincheckTest {

  @BeforeAll
  static void notInTheWithoutAddOpensRun() {
    // -Dtest reaches the pom's second surefire execution too; checking once is enough.
    assumeFalse(Boolean.getBoolean("spillway.asqm.withoutAddOpens"));
  }

  private static ModelCheckingOptions options(int threads, Class<?> model) {
    return new ModelCheckingOptions()
        .iterations(12)
        .invocationsPerIteration(400)
        .threads(threads)
        .actorsPerThread(3)
        .actorsBefore(2)
        .actorsAfter(1)
        .sequentialSpecification(model);
  }

  @Test
  void joinLeaveAndSizeAreLinearizable() {
    options(3, Model.class).check(WithSize.class);
  }

  @Test
  void joinLeaveDelayAndExactHeadAreLinearizableWhileTheLineIsNotEmpty() {
    options(2, PinnedModel.class).check(PinnedWithDelay.class);
  }

  @Test
  void delayAndSizeAreLinearizable() {
    options(2, Model.class).check(WithDelayAndSize.class);
  }

  @Test
  void delayThenSizeCannotContradictEachOther() {
    // Was possible with two volatiles: a reader saw joinB(2)'s stamp (delay 6 − 2 = 4) and then
    // still the old size 1.
    Class<?> ops = WithDelayAndSize.class;
    ExecutionScenario scenario = new ExecutionScenario(
        List.of(op(ops, "joinB", 4L)),
        List.of(
            List.of(op(ops, "queueingDelay", 6L), op(ops, "size")),
            List.of(op(ops, "joinB", 2L))),
        List.of(), null);
    expectLinearizable(ops, scenario);
  }

  @Test
  void delayAcrossAnEmptyLineIsLinearizable() {
    // Was possible with two volatiles: the reader saw size 1 (waiter 1), then joinA(5)'s stamp
    // (delay 8 − 5 = 3) after waiter 1 left, then an empty line: joinA(5) had published its stamp
    // but not its size.
    Class<?> ops = WithDelay.class;
    ExecutionScenario scenario = new ExecutionScenario(
        List.of(op(ops, "joinA", 1L)),
        List.of(
            List.of(op(ops, "leaveA", true), op(ops, "joinA", 5L)),
            List.of(op(ops, "queueingDelay", 8L), op(ops, "queueingDelay", 8L))),
        List.of(), null);
    expectLinearizable(ops, scenario);
  }

  /** Explores every interleaving of one fixed scenario (bounded) and expects no violation. */
  private static void expectLinearizable(Class<?> ops, ExecutionScenario scenario) {
    options(2, Model.class).iterations(0).invocationsPerIteration(20_000)
        .addCustomScenario(scenario).check(ops);
  }

  /** The operation {@code name} of {@code ops} with {@code args}, for a custom scenario. */
  static Actor op(Class<?> ops, String name, Object... args) {
    for (Method method : ops.getMethods()) {
      if (method.getName().equals(name) && method.getParameterCount() == args.length) {
        return new Actor(method, List.of(args));
      }
    }
    throw new IllegalArgumentException(ops.getSimpleName() + " has no operation " + name);
  }

  // ---- the operations ----------------------------------------------------------------------

  /** Two groups of joiners, each leaving only waiters it joined itself. */
  @Param(name = "stamp", gen = LongGen.class, conf = "1:5")
  @Param(name = "now", gen = LongGen.class, conf = "0:8")
  public abstract static class Line {
    final WaiterLine line = new WaiterLine();
    private final ArrayDeque<WaiterLine.Waiter> mineA = new ArrayDeque<>();
    private final ArrayDeque<WaiterLine.Waiter> mineB = new ArrayDeque<>();

    @Operation(nonParallelGroup = "a")
    public void joinA(@Param(name = "stamp") long stamp) {
      mineA.addLast(line.join(stamp));
    }

    /** Leaves this group's newest or oldest waiter; {@code false} if it has none. */
    @Operation(nonParallelGroup = "a")
    public boolean leaveA(boolean newest) {
      return leave(mineA, newest);
    }

    @Operation(nonParallelGroup = "b")
    public void joinB(@Param(name = "stamp") long stamp) {
      mineB.addLast(line.join(stamp));
    }

    @Operation(nonParallelGroup = "b")
    public boolean leaveB(boolean newest) {
      return leave(mineB, newest);
    }

    private boolean leave(ArrayDeque<WaiterLine.Waiter> mine, boolean newest) {
      if (mine.isEmpty()) {
        return false;
      }
      line.leave(newest ? mine.removeLast() : mine.removeFirst());
      return true;
    }
  }

  /** Readers: the size. */
  public static class WithSize extends Line {
    @Operation
    public int size() {
      return line.size();
    }
  }

  /** Readers: the lock-free queueing delay. */
  public static class WithDelay extends Line {
    @Operation
    public long queueingDelay(@Param(name = "now") long now) {
      return line.queueingDelayNanos(now);
    }
  }

  /** Readers: the queueing delay and the size. */
  public static class WithDelayAndSize extends WithDelay {
    @Operation
    public int size() {
      return line.size();
    }
  }

  /**
   * Readers: the queueing delay and the head's stamp read under the guard, over a line that
   * always holds a waiter stamped {@value Model#PINNED} (joins 1..2 go before it, 4..5 after).
   */
  public static class PinnedWithDelay extends WithDelay {
    public PinnedWithDelay() {
      line.join(Model.PINNED);
    }

    @Operation
    public long oldestStamp() {
      return line.oldestStampExact();
    }
  }

  // ---- the sequential models ---------------------------------------------------------------

  /** A multiset of stamps, plus each group's own stamps in join order. */
  public static class Model {
    static final long PINNED = 3;

    final List<Long> stamps = new ArrayList<>();
    private final ArrayDeque<Long> mineA = new ArrayDeque<>();
    private final ArrayDeque<Long> mineB = new ArrayDeque<>();

    public void joinA(long stamp) {
      mineA.addLast(stamp);
      stamps.add(stamp);
    }

    public boolean leaveA(boolean newest) {
      return leave(mineA, newest);
    }

    public void joinB(long stamp) {
      mineB.addLast(stamp);
      stamps.add(stamp);
    }

    public boolean leaveB(boolean newest) {
      return leave(mineB, newest);
    }

    private boolean leave(ArrayDeque<Long> mine, boolean newest) {
      if (mine.isEmpty()) {
        return false;
      }
      stamps.remove(newest ? mine.removeLast() : mine.removeFirst());
      return true;
    }

    public int size() {
      return stamps.size();
    }

    public long queueingDelay(long now) {
      return stamps.isEmpty() ? 0 : Math.max(0, now - oldestStamp());
    }

    public long oldestStamp() {
      return stamps.stream().mapToLong(Long::longValue).min().orElseThrow();
    }
  }

  /** {@link Model} starting with the pinned waiter. */
  public static class PinnedModel extends Model {
    public PinnedModel() {
      stamps.add(PINNED);
    }
  }
}
