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
 * Checks the credit ledger of {@link BreakwaterServerGate} (and so of Protego's gate, which runs
 * on it) with Lincheck: threads admit requests, complete them, report demand and deregister
 * sessions while the control loop resizes the pool, hands explicit credits to drained sessions
 * and evicts idle ones. After every scenario C_issued equals the sum of the sessions' windows —
 * credits issued on admission and on responses, returned on deregistration and eviction, revoked
 * by eq. 6 — and, once every permit is completed and every session gone, it is 0.
 *
 * <p>The operations return nothing: the gate reads its globals a moment stale by design, so no
 * sequential history explains every delta; what must hold is the ledger, which the validation
 * checks. Stress mode, on real threads (the gate's session table uses a
 * {@link java.util.concurrent.locks.StampedLock}, which Lincheck's model checker cannot drive; see
 * {@link SessionTableLincheckTest}).
 *
 * <p>Run: {@code ./mvnw -B -pl overload-credit test -Dtest=CreditLedgerLincheckTest}.
 */
class CreditLedgerLincheckTest {

  private static final long SECOND = 1_000_000_000L;

  @Param(name = "session", gen = IntGen.class, conf = "1:3")
  @Param(name = "demand", gen = IntGen.class, conf = "0:6")
  public static class Ledger {
    private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 20 * SECOND);
    private final AtomicLong explicitCredits = new AtomicLong();
    private final BreakwaterServerGate gate;
    private final OpenPermits open = new OpenPermits();

    public Ledger() {
      this(false);
    }

    /**
     * With {@code spillwayRules}, the default scheme's pool rules (follows the credits out, grows
     * only while used, the queue's share of the SLO) and a per-session cap of 2, so that windows
     * pass the cap as a share and give credits back while a session within it is short.
     */
    protected Ledger(boolean spillwayRules) {
      ServerEnvironment environment = new ServerEnvironment(now::get, (task, delay) -> () -> { },
          t -> 0, (session, delta) -> explicitCredits.addAndGet(delta), OverloadMetrics.NONE, 4);
      BreakwaterConfig config = BreakwaterConfig.forSlo(200_000, 10_000);
      gate = spillwayRules
          ? new BreakwaterServerGate(config.toBuilder().perSessionCap(2).build(), environment,
              false, 10_000, true, true, new QueueShare(200_000, config.targetDelayNanos(),
                  config.dropThresholdNanos()))
          : new BreakwaterServerGate(config, environment);
    }

    @Operation
    public void request(@Param(name = "session") int session, @Param(name = "demand") int demand) {
      open.request(gate, new RequestMetadata().sessionId(session).demand(demand), now.get());
    }

    @Operation
    public void complete() {
      open.completeOne(now.get());
    }

    @Operation
    public void demand(@Param(name = "session") int session, @Param(name = "demand") int demand) {
      gate.onDemand(session, demand, now.get());
    }

    @Operation
    public void deregister(@Param(name = "session") int session) {
      gate.deregister(session, now.get());
    }

    /** One control period, 4 s later: resize, explicit credits, and (every other one) eviction. */
    @Operation(nonParallelGroup = "control")
    public void controlPeriod() {
      gate.updatePool(now.addAndGet(4 * SECOND));
    }

    @Validate
    public void ledger() {
      long windows = 0;
      for (int s = 1; s <= 3; s++) {
        windows += Math.max(0, gate.windowOf(s));
      }
      if (gate.issuedCredits() != windows) {
        throw new AssertionError("C_issued " + gate.issuedCredits() + " but the windows sum to "
            + windows);
      }
      int sessions = 0;
      for (int s = 1; s <= 3; s++) {
        sessions += gate.windowOf(s) >= 0 ? 1 : 0;
      }
      if (gate.sessionCount() != sessions) {
        throw new AssertionError("n_c " + gate.sessionCount() + " but " + sessions + " registered");
      }
      // completing what is open and deregistering everyone brings the ledger back to 0
      open.completeAll(now.get());
      for (int s = 1; s <= 3; s++) {
        gate.deregister(s, now.get());
      }
      if (gate.issuedCredits() != 0 || gate.sessionCount() != 0) {
        throw new AssertionError("after draining: C_issued " + gate.issuedCredits() + ", n_c "
            + gate.sessionCount());
      }
    }
  }

  /** The same operations on the default scheme's rules, the per-session cap a share of 2. */
  @Param(name = "session", gen = IntGen.class, conf = "1:3")
  @Param(name = "demand", gen = IntGen.class, conf = "0:6")
  public static class SpillwayLedger extends Ledger {
    public SpillwayLedger() {
      super(true);
    }
  }

  @Test
  void theLedgerBalancesUnderTheDefaultSchemesRules() {
    stress().check(SpillwayLedger.class);
  }

  @Test
  void theLedgerBalancesInEveryScenario() {
    stress().check(Ledger.class);
  }

  private static StressOptions stress() {
    return new StressOptions()
        .iterations(40)
        .invocationsPerIteration(2_000)
        .threads(3)
        .actorsPerThread(4)
        .actorsBefore(2)
        .actorsAfter(2);
  }
}
