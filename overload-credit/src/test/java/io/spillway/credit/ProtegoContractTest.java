package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.AdmissionContract;
import io.spillway.api.testing.ContractWorld;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Protego's admission control passes the admission contract under both rules. */
class ProtegoContractTest {

  private static final long MS = 1_000_000;

  /** The default: the authors' iteration. */
  @Nested
  class Authors extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Protego.of(ProtegoConfig.forSlo(sloNanos, rttNanos));
    }

    /**
     * Issue 5: with 1,000 sessions the pool must reach about one credit per session that has
     * requests, or requests wait for credits at the clients and expire. Half the capacity must be
     * served in full once the pool has grown (the printed rule serves about 1 % here).
     */
    @Test
    void aThousandClientsAtHalfCapacityAreServedInFull() {
      int workers = 4;
      ContractWorld w = new ContractWorld(scheme(SLO_NANOS, RTT_NANOS), 0, 1_000, workers,
          SERVICE_NANOS, RTT_NANOS, SLO_NANOS, seed());
      w.setRate(0.5 * w.capacityRps(workers));
      w.runFor(300 * MS); // the pool grows by one credit an iteration: 40 → ~1,000
      long issued = w.issued();
      long served = w.served();
      w.runFor(100 * MS);
      long issuedAfter = w.issued() - issued;
      long servedAfter = w.served() - served;
      assertTrue(issuedAfter > 10_000, w.fingerprint());
      assertTrue(servedAfter >= 0.99 * issuedAfter,
          "served " + servedAfter + " of " + issuedAfter + ": " + w.fingerprint());
    }
  }

  /** Algorithm 1 as printed, kept as an option. */
  @Nested
  class Paper extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Protego.of(ProtegoConfig.forSlo(sloNanos, rttNanos).withRule(ProtegoConfig.Rule.PAPER));
    }
  }
}
