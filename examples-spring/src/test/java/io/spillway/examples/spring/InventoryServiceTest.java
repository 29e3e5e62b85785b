package io.spillway.examples.spring;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class InventoryServiceTest {

  @Test
  void givenRoundsAreServedAsGivenWithoutCalibrating() {
    InventoryService given = new InventoryService(Duration.ofMillis(150), 0.2, "31663, 7916");
    assertArrayEquals(new int[] {31663, 7916}, given.rounds());
    assertTrue(Double.isNaN(given.nanosPerRound()), "nothing was measured");
    assertArrayEquals(new int[] {0, 0}, new InventoryService(Duration.ZERO, 0.2, "0,0").rounds());
  }

  @Test
  void malformedRoundsFailWithThePropertysName() {
    for (String bad : new String[] {"31663", "1,2,3", "a,b", "-1,5", "1.5,2"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> new InventoryService(Duration.ofMillis(150), 0.2, bad), bad);
      assertTrue(e.getMessage().contains("inventory.rounds"), e.getMessage());
    }
  }
}
