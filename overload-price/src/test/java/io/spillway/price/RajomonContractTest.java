package io.spillway.price;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.AdmissionContract;
import org.junit.jupiter.api.Nested;

/** Rajomon passes the admission contract: failing fast (the authors' default), waiting, audited. */
class RajomonContractTest {

  @Nested
  class FailFast extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Rajomon.of(RajomonConfig.forSlo(sloNanos, rttNanos));
    }
  }

  @Nested
  class WaitingForTokens extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Rajomon.of(RajomonConfig.forSlo(sloNanos, rttNanos).toBuilder()
          .clientWaitTimeoutNanos(sloNanos / 2).build());
    }
  }

  @Nested
  class WithTokenAudit extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      RajomonConfig base = RajomonConfig.forSlo(sloNanos, rttNanos);
      return Rajomon.of(base.toBuilder().tokenAudit(true, 4 * base.tokensPerRefill()).build());
    }
  }
}
