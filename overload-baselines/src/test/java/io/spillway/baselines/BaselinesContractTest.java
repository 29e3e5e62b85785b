package io.spillway.baselines;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.AdmissionContract;
import org.junit.jupiter.api.Nested;

/** Every baseline passes the admission contract, configured with its defaults for the world's SLO. */
class BaselinesContractTest {

  @Nested
  class CoDelContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return CoDel.of(CoDelConfig.forSlo(sloNanos));
    }
  }

  @Nested
  class WindowContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Window.of(WindowConfig.forSlo(sloNanos));
    }
  }

  @Nested
  class SedaContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Seda.of(SedaConfig.forSlo(sloNanos, CLIENTS)); // adj_i scaled to the world's clients
    }
  }

  @Nested
  class DagorContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Dagor.of(DagorConfig.forSlo(sloNanos));
    }
  }
}
