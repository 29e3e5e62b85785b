package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The combined delay is the maximum of the measured stages plus the application's stages, and
 * each stage's own reading is available by name for the Actuator endpoint.
 */
class ServerQueueDelayTest {

  @Test
  void combinesByMaximumThenSumAndReadsEachStageByName() {
    ServerQueueDelay delay = new ServerQueueDelay();
    delay.addMeasured("workers", now -> 3_000);
    delay.addMeasured("cpu-run-queue", now -> 5_000);
    delay.addStage("downstreamPool", now -> now == 7 ? 200 : 0);

    assertThat(delay.signal().queueingDelayNanos(7)).isEqualTo(5_200);
    assertThat(delay.readings(7)).containsExactly(Map.entry("workers", 3_000L),
        Map.entry("cpu-run-queue", 5_000L), Map.entry("downstreamPool", 200L));
    assertThat(delay.readings(8).get("downstreamPool")).isZero();
    assertThat(delay.stageNames()).containsExactly("workers", "cpu-run-queue", "downstreamPool");
  }
}
