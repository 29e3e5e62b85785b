package io.spillway.peers;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.AdmissionContract;
import org.junit.jupiter.api.Nested;

/** Every peer passes the admission contract, configured with the library's defaults. */
class PeersContractTest {

  @Nested
  class Gradient2Contract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return NetflixConcurrencyLimit.of(Gradient2Config.defaults());
    }
  }

  @Nested
  class VegasContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return NetflixConcurrencyLimit.of(VegasConfig.defaults());
    }
  }

  @Nested
  class AimdContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return NetflixConcurrencyLimit.of(AimdConfig.defaults());
    }
  }

  @Nested
  class AimdWithSloTimeoutContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return NetflixConcurrencyLimit.of(AimdConfig.defaults().withTimeout(sloNanos / 2));
    }
  }
}
