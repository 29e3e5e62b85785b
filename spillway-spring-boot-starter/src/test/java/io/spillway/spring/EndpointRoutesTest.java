package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code Spillway-Routes} header: written by the server's gate, read by client sessions. */
class EndpointRoutesTest {

  @Test
  void routesAreTriedInTheServersOrder() {
    EndpointRoutes r = EndpointRoutes.parse("- /actuator/**, - /error, 1 /orders/**, 2 /orders/"
        + "big/**, 0 /**");
    assertThat(r.gateFor("/actuator/health")).isEqualTo(-1);
    assertThat(r.gateFor("/error")).isEqualTo(-1);
    assertThat(r.gateFor("/orders/big/7")).isEqualTo(1); // first match wins, as at the server
    assertThat(r.gateFor("/items/7")).isZero();
  }

  @Test
  void withoutTheHeaderEveryPathIsTheDefaultGates() {
    assertThat(EndpointRoutes.parse(null).gateFor("/anything")).isZero();
    assertThat(EndpointRoutes.parse(" ").gateFor("/anything")).isZero();
  }

  @Test
  void patternsWithCommasSpacesAndPercentsSurviveTheHeader() {
    List<String> patterns = List.of("/a,b/**", "/with space/*", "/100%25/x", "/**");
    String header = EndpointRoutes.format(List.of(3, -1, 2, 0), patterns);
    assertThat(header).isEqualTo("3 /a%2Cb/**, - /with%20space/*, 2 /100%2525/x, 0 /**");
    EndpointRoutes r = EndpointRoutes.parse(header);
    assertThat(r.gateFor("/a,b/c")).isEqualTo(3);
    assertThat(r.gateFor("/with space/c")).isEqualTo(-1);
    assertThat(r.gateFor("/100%25/x")).isEqualTo(2);
  }

  @Test
  void aMalformedHeaderIsRefusedWithItsReason() {
    assertThatThrownBy(() -> EndpointRoutes.parse("1")).isInstanceOf(
        IllegalArgumentException.class).hasMessageContaining("without a gate and a pattern");
    assertThatThrownBy(() -> EndpointRoutes.parse("x /a")).hasMessageContaining("not an index");
    assertThatThrownBy(() -> EndpointRoutes.parse("-3 /a")).hasMessageContaining("out of range");
    assertThatThrownBy(() -> EndpointRoutes.parse("256 /a")).hasMessageContaining("out of range");
    assertThatThrownBy(() -> EndpointRoutes.parse("1 /a/{id:(}/**, 0 /**"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("/a/{id:(}/**");
  }
}
