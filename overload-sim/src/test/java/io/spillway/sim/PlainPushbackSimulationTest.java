package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The Spring demo's HTTP service in virtual time ({@code scenarios/spring-http-clients.conf}: one
 * core, 240 µs a served request, 35 µs a refusal, every client plain): clients that honour the
 * refusals' pushback, as the starter's HTTP client side does, keep the core for requests it
 * serves; clients that do not make it pay for every refusal (docs/results/spring.md).
 */
class PlainPushbackSimulationTest {

  private static final Path SPRING = Path.of("..", "scenarios", "spring-http-clients.conf");

  private static ResultRecord atThreeTimes(String pushback) throws Exception {
    Experiment.Results r = new Experiment(Scenario.load(SPRING, Map.of("demand", "3.0",
        "warmup_ms", "1000", "duration_ms", "2000", "plain_pushback", pushback, "sweep", "")), 1)
        .run();
    return r.rows().stream().filter(x -> x.scheme().equals("spillway")).findFirst().orElseThrow();
  }

  private static String seen(ResultRecord row) {
    return "goodput " + row.goodputRps() + " of capacity " + row.capacityRps() + ", drop "
        + row.dropRate() + ", expired " + row.expiredRate() + ", p99 " + row.p99Micros() + " us";
  }

  @Test
  void clientsThatHonourThePushbackKeepTheCoreForServedRequests() throws Exception {
    ResultRecord held = atThreeTimes("true");
    assertTrue(held.goodputRps() >= 0.95 * held.capacityRps(), seen(held));
    assertTrue(held.p99Micros() <= 11_700, seen(held));
    assertTrue(held.expiredRate() > 0.5, "most of the 3x held in the client: " + seen(held));
  }

  @Test
  void clientsThatDoNotMakeTheCorePayForEveryRefusal() throws Exception {
    ResultRecord plain = atThreeTimes("false");
    assertTrue(plain.goodputRps() < 0.75 * plain.capacityRps(), seen(plain));
    assertTrue(plain.dropRate() > 0.7, seen(plain));
    assertEquals(0, plain.expiredRate(), seen(plain));
  }
}
