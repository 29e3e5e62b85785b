package io.spillway.credit;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.AdmissionContract;
import org.junit.jupiter.api.Nested;

/** Breakwater and both of its Fig. 9 ablations pass the admission contract. */
class BreakwaterContractTest {

  @Nested
  class Full extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Breakwater.of(BreakwaterConfig.forSlo(sloNanos, rttNanos));
    }
  }

  @Nested
  class CreditsOnly extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Breakwater.creditsOnly(BreakwaterConfig.forSlo(sloNanos, rttNanos));
    }
  }

  @Nested
  class CreditsWithSpeculation extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Breakwater.creditsWithSpeculation(BreakwaterConfig.forSlo(sloNanos, rttNanos));
    }
  }
}
