package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Counters per gRPC method: made once per method, bounded, and announced to late readers. */
class GrpcServerStatsTest {

  private final GrpcServerStats stats = new GrpcServerStats(new GateStats("grpc"), () -> 7);

  @Test
  void aMethodsCountersAreMadeOnceAndNamedByTheMethod() {
    GateStats ping = stats.method("test.Ping/Ping");
    assertThat(stats.method(new String("test.Ping/Ping"))).isSameAs(ping);
    assertThat(ping.endpoint()).isEqualTo("test.Ping/Ping");
    assertThat(stats.endpoint()).isEqualTo("grpc");
    assertThat(stats.queueDelayNanos()).isEqualTo(7);
  }

  @Test
  void pastTheBoundEveryOtherMethodSharesTheUnknownCounters() {
    for (int i = 0; i < GrpcServerStats.MAX_METHODS; i++) {
      assertThat(stats.method("s/m" + i).endpoint()).isEqualTo("s/m" + i);
    }
    GateStats unknown = stats.method("s/one-more");
    assertThat(unknown.endpoint()).isEqualTo(GrpcServerStats.UNKNOWN_METHOD);
    assertThat(stats.method("s/and-another")).isSameAs(unknown);
    assertThat(stats.method("s/m0").endpoint()).as("a method counted before stays").isEqualTo("s/m0");
    assertThat(stats.methods()).hasSize(GrpcServerStats.MAX_METHODS + 1);
  }

  @Test
  void aReaderGetsTheMethodsSoFarAndEachNewOne() {
    stats.method("a/x");
    List<String> seen = new ArrayList<>();
    stats.forEachMethod(m -> seen.add(m.endpoint()));
    stats.method("b/y");
    stats.method("a/x");
    assertThat(seen).containsExactly("a/x", "b/y");
  }
}
