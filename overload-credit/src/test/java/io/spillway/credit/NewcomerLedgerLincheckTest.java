package io.spillway.credit;

import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerEnvironment;
import java.util.concurrent.atomic.AtomicLong;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * Checks the credit ledger of {@link BreakwaterServerGate} where sessions register from a named
 * origin and so start on probation (its class comment, "Newcomers"): threads register sessions,
 * send on them again (which ends their probation), complete requests and deregister sessions at
 * once. Whatever the interleaving, a session's provisional credit is counted in C_issued exactly
 * when its probation has ended, and a session counts among the probationers exactly while it is
 * on probation: once every permit is completed and every session gone, C_issued, n_c and the
 * sessions registered are all 0.
 *
 * <p>Stress mode, on real threads, as {@link CreditLedgerLincheckTest}.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-credit test -Dtest=NewcomerLedgerLincheckTest}.
 */
class NewcomerLedgerLincheckTest {

  private static final long ORIGIN = 7;

  @Param(name = "session", gen = IntGen.class, conf = "1:2")
  public static class Ledger {
    private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 1_000);
    private final BreakwaterServerGate gate = new BreakwaterServerGate(
        BreakwaterConfig.forSlo(200_000, 10_000), new ServerEnvironment(now::get,
            (task, delay) -> () -> { }, t -> 0, (session, delta) -> { },
            OverloadMetrics.NONE, 4));
    private final OpenPermits open = new OpenPermits();

    @Operation
    public void request(@Param(name = "session") int session) {
      open.request(gate, new RequestMetadata().sessionId(session).origin(ORIGIN), now.get());
    }

    @Operation
    public void complete() {
      open.completeOne(now.get());
    }

    @Operation
    public void deregister(@Param(name = "session") int session) {
      gate.deregister(session, now.get());
    }

    @Validate
    public void ledger() {
      open.completeAll(now.get());
      for (int s = 1; s <= 2; s++) {
        gate.deregister(s, now.get());
      }
      if (gate.issuedCredits() != 0 || gate.sessionCount() != 0 || gate.activeSessions() != 0) {
        throw new AssertionError("after draining: C_issued " + gate.issuedCredits() + ", n_c "
            + gate.activeSessions() + ", sessions " + gate.sessionCount());
      }
    }
  }

  @Test
  void provisionalCreditsBalanceInEveryScenario() {
    new StressOptions()
        .iterations(40)
        .invocationsPerIteration(2_000)
        .threads(3)
        .actorsPerThread(3)
        .actorsBefore(0)
        .actorsAfter(0)
        .check(Ledger.class);
  }
}
