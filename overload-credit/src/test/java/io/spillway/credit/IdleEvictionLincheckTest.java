package io.spillway.credit;

import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * Checks that {@link BreakwaterServerGate}'s sweep of idle sessions never takes a live one: a
 * session idle past {@link BreakwaterServerGate#SESSION_IDLE_TIMEOUT_NANOS} sends a request while
 * the sweep finds it idle. Whatever the interleaving, a request admitted on the session leaves it
 * registered for as long as the request is in flight (the sweep decides and deregisters under the
 * session's monitor, which the admission takes too).
 *
 * <p>Stress mode, on real threads, as {@link CreditLedgerLincheckTest}.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-credit test -Dtest=IdleEvictionLincheckTest}.
 */
class IdleEvictionLincheckTest {

  public static class Sweep {
    private static final long START = Long.MAX_VALUE - 1_000;
    private final long now = START + BreakwaterServerGate.SESSION_IDLE_TIMEOUT_NANOS + 1;
    private final BreakwaterServerGate gate = new BreakwaterServerGate(
        BreakwaterConfig.forSlo(200_000, 10_000), new ServerEnvironment(() -> now,
            (task, delay) -> () -> { }, t -> 0, (session, delta) -> { },
            OverloadMetrics.NONE, 4));
    private final OpenPermits open = new OpenPermits();

    public Sweep() {
      gate.admit(new RequestMetadata().sessionId(1).flags(RequestMetadata.FLAG_REGISTER), START)
          .complete(Outcome.SUCCESS, START, new ResponseMetadata());
      gate.evictIdleSessions(START); // the first sweep only starts the sweeps' clock
    }

    @Operation
    public void request() {
      open.request(gate, new RequestMetadata().sessionId(1), now);
    }

    @Operation
    public void sweep() {
      gate.evictIdleSessions(now);
    }

    @Validate
    public void liveSessionKept() {
      boolean inFlight = !open.isEmpty();
      int window = gate.windowOf(1);
      open.completeAll(now);
      if (inFlight && window < 0) {
        throw new AssertionError("a session with a request in flight was evicted as idle");
      }
    }
  }

  @Test
  void aSessionWithARequestInFlightIsNeverEvicted() {
    new StressOptions()
        .iterations(60)
        .invocationsPerIteration(3_000)
        .threads(2)
        .actorsPerThread(1)
        .actorsBefore(0)
        .actorsAfter(0)
        .check(Sweep.class);
  }
}
