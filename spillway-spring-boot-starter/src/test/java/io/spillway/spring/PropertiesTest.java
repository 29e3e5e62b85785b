package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.spring.internal.SpillwayAutoConfiguration;
import io.spillway.spring.internal.UnknownProperties;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Start-up with good, bad and unknown {@code spillway.*} properties. */
class PropertiesTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class));

  @Test
  void theDefaultsStartAGateForEveryEndpoint() {
    runner.run(context -> {
      assertThat(context).hasNotFailed();
      SpillwayHttpGate gate = context.getBean(SpillwayHttpGate.class);
      assertThat(gate.endpointFor("/anything")).isNotNull();
      assertThat(gate.endpointFor("/actuator/health")).isNull();
      assertThat(gate.endpointFor("/anything").sloNanos())
          .isEqualTo(SpillwayProperties.DEFAULT_SLO_MILLIS * 1_000_000);
      assertThat(context.getBean(UnknownProperties.class).names()).isEmpty();
    });
  }

  @Test
  void aBadValueFailsStartUpNamingTheProperty() {
    for (String[] bad : new String[][] {
        {"spillway.slo=-5ms", "spillway.slo"},
        {"spillway.slo=fast", "spillway.slo"},
        {"spillway.scheme=magic", "spillway.scheme"},
        {"spillway.reject-status=500", "spillway.reject-status"},
        {"spillway.parallelism=0", "spillway.parallelism"},
        {"spillway.budget.target=0s", "spillway.budget.target"},
        {"spillway.budget.when-absent=sometimes", "spillway.budget.when-absent"},
        {"spillway.endpoints[0].path=/a/**", "spillway.endpoints[0].slo", "spillway.endpoints[0].slo=0ms"},
    }) {
      ApplicationContextRunner r = runner.withPropertyValues(bad[0]);
      if (bad.length > 2) {
        r = r.withPropertyValues(bad[2]);
      }
      r.run(context -> {
        assertThat(context).hasFailed();
        StringBuilder messages = new StringBuilder();
        for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
          messages.append(t.getMessage()).append('\n');
        }
        String expected = bad[1];
        assertThat(messages.toString().replace("budget.whenAbsent", "budget.when-absent")
            .replace("endpoints[0].budgetTarget", "endpoints[0].budget-target"))
            .as(bad[0]).contains(expected);
      });
    }
  }

  /**
   * Values Spring binds without complaint but that cannot work: a pattern that no request path
   * matches (paths start with {@code /}), an endpoint name its meters would share with another
   * endpoint's, a duration beyond what the gates count in nanoseconds.
   */
  @Test
  void aValueThatCannotWorkFailsStartUpNamingTheProperty() {
    org.assertj.core.api.SoftAssertions softly = new org.assertj.core.api.SoftAssertions();
    for (String[] bad : new String[][] {
        {"spillway.endpoints[0].path=api/**", "spillway.endpoints[0].path"},
        {"spillway.excluded-paths=/actuator/**,health", "spillway.excluded-paths[1]"},
        {"spillway.endpoints[0].path=/a/**", "spillway.endpoints[0].name",
            "spillway.endpoints[0].name=default"},
        {"spillway.endpoints[1].path=/b/**", "spillway.endpoints[1].name",
            "spillway.endpoints[0].path=/a/**,spillway.endpoints[0].name=x,spillway.endpoints[1].name=x"},
        {"spillway.endpoints[1].path=/b/**", "spillway.endpoints[1].name",
            "spillway.endpoints[0].path=/b/**,spillway.endpoints[0].enabled=false"},
        {"spillway.slo=200000d", "spillway.slo"},
        {"spillway.budget.target=200000d", "spillway.budget.target"},
        {"spillway.client.slo=200000d", "spillway.client.slo"},
        {"spillway.client.grpc-retry-to-replica=1.5", "spillway.client.grpcRetryToReplica"},
        {"spillway.endpoints[0].path=/a/**", "spillway.endpoints[0].slo",
            "spillway.endpoints[0].slo=200000d"},
    }) {
      ApplicationContextRunner r = runner.withPropertyValues(bad[0]);
      if (bad.length > 2) {
        r = r.withPropertyValues(bad[2].split(","));
      }
      r.run(context -> {
        StringBuilder messages = new StringBuilder();
        for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
          messages.append(t.getMessage()).append('\n');
        }
        softly.assertThat(messages.toString().replace("excludedPaths", "excluded-paths"))
            .as(String.join(" ", bad)).contains(bad[1]);
      });
    }
    softly.assertAll();
  }

  /**
   * A pattern whose segment the Ant matcher cannot compile ({@code {id:[}}, an unclosed regular
   * expression) binds and starts like any other, and then throws on every request whose path
   * reaches that segment: it must fail start-up instead, naming the property.
   */
  @Test
  void aPatternTheMatcherCannotCompileFailsStartUpNamingTheProperty() {
    org.assertj.core.api.SoftAssertions softly = new org.assertj.core.api.SoftAssertions();
    for (String[] bad : new String[][] {
        {"spillway.endpoints[0].path=/orders/{id:[}/**", "spillway.endpoints[0].path"},
        {"spillway.excluded-paths=/actuator/**,/internal/{x:(}", "spillway.excluded-paths[1]"},
    }) {
      runner.withPropertyValues(bad[0]).run(context -> {
        StringBuilder messages = new StringBuilder();
        for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
          messages.append(t.getMessage()).append('\n');
        }
        softly.assertThat(messages.toString().replace("excludedPaths", "excluded-paths"))
            .as(bad[0]).contains(bad[1]);
      });
    }
    softly.assertAll();
  }

  @Test
  void unknownPropertiesAreReportedAndStartUpGoesOn() {
    runner.withPropertyValues("spillway.sol=5ms", "spillway.endpoints[0].path=/search/**",
        "spillway.endpoints[0].budget-target=3ms", "spillway.endpoints[0].sllo=1ms",
        "spillway.jfr.admitted-sample-every=10").run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(UnknownProperties.class).names())
              .containsExactly("spillway.endpoints[0].sllo", "spillway.sol");
        });
  }

  @Test
  void theWarningNamesTheKnownPropertiesAsTheReadmeSpellsThem() {
    java.util.logging.Logger jul = java.util.logging.Logger.getLogger(UnknownProperties.class.getName());
    List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.logging.Handler handler = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord record) {
        warnings.add(java.text.MessageFormat.format(record.getMessage(), record.getParameters()));
      }

      @Override
      public void flush() { }

      @Override
      public void close() { }
    };
    jul.addHandler(handler);
    try {
      runner.withPropertyValues("spillway.sol=5ms").run(context -> assertThat(context).hasNotFailed());
    } finally {
      jul.removeHandler(handler);
    }
    assertThat(warnings).hasSize(1);
    String warning = warnings.get(0);
    assertThat(warning).contains("spillway.sol");
    // the names a user would copy from it are the documented, dashed ones
    assertThat(warning).contains("spillway.budget.when-absent", "spillway.excluded-paths",
        "spillway.endpoints[i].budget-target", "spillway.jfr.admitted-sample-every");
    assertThat(warning).doesNotContain("whenabsent", "excludedpaths", "budgettarget",
        "admittedsampleevery");
    // nor a setting the README does not have (the randomized tests' seed)
    assertThat(warning).doesNotContain("seed");
  }

  @Test
  void perEndpointOverridesGetTheirOwnGate() {
    runner.withPropertyValues("spillway.endpoints[0].path=/search/**",
        "spillway.endpoints[0].name=search", "spillway.endpoints[0].slo=20ms",
        "spillway.endpoints[1].path=/internal/**", "spillway.endpoints[1].enabled=false")
        .run(context -> {
          SpillwayHttpGate gate = context.getBean(SpillwayHttpGate.class);
          assertThat(gate.endpointFor("/search/books").name()).isEqualTo("search");
          assertThat(gate.endpointFor("/search/books").sloNanos()).isEqualTo(20_000_000);
          assertThat(gate.endpointFor("/internal/x")).isNull();
          assertThat(gate.endpointFor("/other").name()).isEqualTo("default");
        });
  }

  @Test
  void disabledMeansNoGate() {
    runner.withPropertyValues("spillway.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(SpillwayHttpGate.class));
  }
}
