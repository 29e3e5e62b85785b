package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@code --core1-nice}: the core-1 services process's niceness, from 0 (the generator's own) to 19. */
class GraphCoreOneNiceTest {

  @Test
  void everyNicenessAUserMayAskForIsAccepted() {
    assertEquals(0, GraphHarnessMain.parseNice("--core1-nice", "0"));
    assertEquals(10, GraphHarnessMain.parseNice("--core1-nice", " 10"));
    assertEquals(19, GraphHarnessMain.parseNice("--core1-nice", "19"));
  }

  @Test
  void aHigherPriorityThanTheGeneratorsOrNoNumberIsRefusedByName() {
    for (String bad : new String[] {"-1", "20", "ten", "2.5"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> GraphHarnessMain.parseNice("--core1-nice", bad));
      assertTrue(e.getMessage().contains("--core1-nice") && e.getMessage().contains(bad), e.getMessage());
    }
  }
}
