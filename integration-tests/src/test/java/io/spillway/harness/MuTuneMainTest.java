package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.sim.MuTunePlot.Point;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The socket experiment's plots draw one point per configuration and load: the median of its repetitions. */
class MuTuneMainTest {

  @Test
  void repetitionsArePlottedAsTheirMedian() {
    List<Point> rows = List.of(new Point("IB", 500, 775.7), new Point("IB", 500, 2709.5), new Point("IB", 500, 1000),
        new Point("IB", 50, 1406), new Point("DB16", 50, 600), new Point("DB16", 50, 700),
        new Point("IB", 1500, 1508.4));
    assertEquals(List.of(new Point("IB", 50, 1406), new Point("IB", 500, 1000), new Point("IB", 1500, 1508.4),
        new Point("DB16", 50, 650)), MuTuneMain.medians(rows));
  }
}
