package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Sessions built without an id get generated, distinct ones. */
class ClientSessionIdsTest {

  @Test
  void twoClientsOfTheDefaultSchemeGetDifferentSessions() {
    try (SpillwayClientInterceptor a = SpillwayGrpc.client().sloMillis(5).build();
        SpillwayClientInterceptor b = SpillwayGrpc.client().sloMillis(5).build()) {
      assertNotEquals(a.sessionId(), b.sessionId());
      assertTrue(a.sessionId() > 0 && b.sessionId() > 0);
    }
  }
}
