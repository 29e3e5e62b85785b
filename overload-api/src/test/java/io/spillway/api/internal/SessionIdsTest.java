package io.spillway.api.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Generated session ids: positive, never 0, unique in the process. */
class SessionIdsTest {

  @Test
  void idsAreDistinctAndPositive() {
    Set<Long> seen = new HashSet<>();
    for (int i = 0; i < 100_000; i++) {
      long id = SessionIds.next();
      assertTrue(id > 0, "id " + id);
      assertTrue(seen.add(id), "duplicate " + id);
    }
  }

  @Test
  void theMixIsABijectionOnNeighbours() {
    assertNotEquals(SessionIds.mix(0), SessionIds.mix(1));
    assertEquals(0, SessionIds.mix(0), "0 maps to 0, which next() skips");
  }
}
