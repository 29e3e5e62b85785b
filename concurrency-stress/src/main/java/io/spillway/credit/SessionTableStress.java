package io.spillway.credit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongToIntFunction;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * jcstress tests of {@link SessionTable}: a lookup takes no lock when no writer interferes, reading
 * a stripe's arrays racily and keeping the result only if the stripe's {@code StampedLock} stamp
 * still validates. These tests put a writer exactly where a racy read goes wrong — a removal that
 * re-inserts the rest of a probe run, a resize that swaps the arrays — and check that a session
 * present throughout is always found. Lincheck's stress mode rarely lands a read inside such a
 * window and its model checker cannot drive {@code StampedLock} (docs/results/reliability.md); here
 * every iteration starts both actors at the window.
 *
 * <p>The keys are chosen by the table's own hash ({@link SessionTable#mix}): the top 6 bits pick
 * one of 64 stripes, the low bits the first probe slot in a stripe of {@link
 * SessionTable#INITIAL_CAPACITY} slots.
 */
public final class SessionTableStress {

  private SessionTableStress() {}

  private static int stripeOf(long key) {
    return (int) (SessionTable.mix(key) >>> 58);
  }

  private static int homeOf(long key) {
    return (int) SessionTable.mix(key) & (SessionTable.INITIAL_CAPACITY - 1);
  }

  /** The first {@code n} positive keys that {@code group} puts in one group. */
  private static long[] firstSharing(int n, LongToIntFunction group) {
    Map<Integer, List<Long>> byGroup = new HashMap<>();
    for (long key = 1; ; key++) {
      List<Long> keys = byGroup.computeIfAbsent(group.applyAsInt(key), k -> new ArrayList<>());
      keys.add(key);
      if (keys.size() == n) {
        return keys.stream().mapToLong(Long::longValue).toArray();
      }
    }
  }

  /** The first {@code n} positive keys that share one stripe and one first probe slot. */
  static long[] sameSlot(int n) {
    return firstSharing(n, key -> stripeOf(key) * SessionTable.INITIAL_CAPACITY + homeOf(key));
  }

  /** The first {@code n} positive keys that share one stripe. */
  static long[] sameStripe(int n) {
    return firstSharing(n, SessionTableStress::stripeOf);
  }

  private static final long[] RUN = sameSlot(3);

  /** A table holding three sessions in one probe run, {@code third} last. */
  private static SessionTable<Object> probeRun(Object third) {
    SessionTable<Object> table = new SessionTable<>();
    table.putIfAbsent(RUN[0], "first");
    table.putIfAbsent(RUN[1], "second");
    table.putIfAbsent(RUN[2], third);
    return table;
  }

  /**
   * Three sessions in one probe run (first, second, third from their shared home slot); removing
   * the first moves the other two back one slot each, one at a time. A lookup of the third, present
   * throughout, must find it.
   */
  @JCStressTest
  @Description("A lookup of a present session while a removal repairs the probe run it sits in")
  @Outcome(id = "1, 1", expect = Expect.ACCEPTABLE, desc = "found; the removal ran")
  @Outcome(id = "1, 0", expect = Expect.FORBIDDEN, desc = "found, but the removal found nothing")
  @Outcome(id = "0, .*", expect = Expect.FORBIDDEN, desc = "a present session was not found")
  @State
  public static class LookupDuringProbeRunRepair {
    private final Object third = "third";
    private final SessionTable<Object> table = probeRun(third);

    @Actor
    public void remove(II_Result r) {
      r.r2 = table.remove(RUN[0]) != null ? 1 : 0;
    }

    @Actor
    public void lookup(II_Result r) {
      r.r1 = table.get(RUN[2]) == third ? 1 : 0;
    }
  }

  private static final long[] STRIPE = sameStripe(SessionTable.INITIAL_CAPACITY / 2 + 1);

  /**
   * A stripe holding half its capacity; one more session doubles its arrays. A lookup of a session
   * present throughout must find it, whichever arrays it reads.
   */
  @JCStressTest
  @Description("A lookup of a present session while an insertion resizes its stripe")
  @Outcome(id = "1, 1", expect = Expect.ACCEPTABLE, desc = "found; the insertion ran")
  @Outcome(id = "1, 0", expect = Expect.FORBIDDEN, desc = "found, but the insertion found a value")
  @Outcome(id = "0, .*", expect = Expect.FORBIDDEN, desc = "a present session was not found")
  @State
  public static class LookupDuringResize {
    private final SessionTable<Object> table = new SessionTable<>();
    private final Object[] values = new Object[STRIPE.length];

    public LookupDuringResize() {
      for (int i = 0; i < STRIPE.length - 1; i++) {
        values[i] = "session " + i;
        table.putIfAbsent(STRIPE[i], values[i]);
      }
    }

    @Actor
    public void insert(II_Result r) {
      r.r2 = table.putIfAbsent(STRIPE[STRIPE.length - 1], "new") == null ? 1 : 0;
    }

    @Actor
    public void lookup(II_Result r) {
      int last = STRIPE.length - 2;
      r.r1 = table.get(STRIPE[0]) == values[0] && table.get(STRIPE[last]) == values[last] ? 1 : 0;
    }
  }

  /**
   * Two registrations of one session id race: exactly one inserts, the other gets the winner's
   * value, and the table keeps the winner.
   */
  @JCStressTest
  @Description("Two putIfAbsent calls for one id")
  @Outcome(id = "1, 2", expect = Expect.ACCEPTABLE, desc = "the first inserted, the second saw it")
  @Outcome(id = "2, 1", expect = Expect.ACCEPTABLE, desc = "the second inserted, the first saw it")
  @Outcome(expect = Expect.FORBIDDEN, desc = "both inserted, or a call saw a value nobody kept")
  @State
  public static class RacingRegistrations {
    private final SessionTable<Object> table = new SessionTable<>();
    private final Object one = "one";
    private final Object two = "two";

    public RacingRegistrations() {
      table.putIfAbsent(RUN[0], "neighbour"); // the id's slot is taken: it probes
    }

    @Actor
    public void first(II_Result r) {
      Object seen = table.putIfAbsent(RUN[1], one);
      r.r1 = seen == null ? 1 : seen == two ? 2 : 3;
    }

    @Actor
    public void second(II_Result r) {
      Object seen = table.putIfAbsent(RUN[1], two);
      r.r2 = seen == null ? 1 : seen == one ? 2 : 3;
    }

    @Arbiter
    public void kept(II_Result r) {
      Object kept = table.get(RUN[1]);
      boolean consistent = r.r1 == 1 ? kept == one : r.r2 == 1 && kept == two;
      if (!consistent) {
        r.r1 = 0;
      }
    }
  }

  /**
   * A sweep over every session (the control loop's) while a neighbour in the same probe run is
   * removed: a session present throughout is visited exactly once.
   */
  @JCStressTest
  @Description("forEach while a session in the same probe run is removed")
  @Outcome(id = "1, 1", expect = Expect.ACCEPTABLE, desc = "visited once; the removal ran")
  @Outcome(expect = Expect.FORBIDDEN, desc = "missed, visited twice, or the removal found nothing")
  @State
  public static class SweepDuringRemoval {
    private final Object third = "third";
    private final SessionTable<Object> table = probeRun(third);

    @Actor
    public void remove(II_Result r) {
      r.r2 = table.remove(RUN[0]) != null ? 1 : 0;
    }

    @Actor
    public void sweep(II_Result r) {
      int[] visits = new int[1];
      table.forEach(v -> {
        if (v == third) {
          visits[0]++;
        }
      });
      r.r1 = visits[0];
    }
  }
}
