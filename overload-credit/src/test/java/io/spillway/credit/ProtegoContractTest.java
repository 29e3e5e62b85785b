package io.spillway.credit;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.AdmissionContract;

/** Protego's admission control passes the admission contract. */
class ProtegoContractTest extends AdmissionContract {

  @Override
  protected OverloadScheme scheme(long sloNanos, long rttNanos) {
    return Protego.of(ProtegoConfig.forSlo(sloNanos, rttNanos));
  }
}
