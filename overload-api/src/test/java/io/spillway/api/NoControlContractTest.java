package io.spillway.api;

import io.spillway.api.testing.AdmissionContract;

class NoControlContractTest extends AdmissionContract {

  @Override
  protected OverloadScheme scheme(long sloNanos, long rttNanos) {
    return NoControl.INSTANCE;
  }
}
