package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The IDE metadata the build writes into the starter's jar: what an application developer sees
 * when completing {@code spillway.*} in application.properties. The README's properties table
 * gives the defaults; the metadata must give the same ones, and the values a string property
 * accepts.
 */
class ConfigurationMetadataTest {

  private final DocumentContext metadata = JsonPath.parse(
      readString(Path.of("target/classes/META-INF/spring-configuration-metadata.json")));

  @Test
  void everySpillwayPropertyHasADescription() {
    List<Map<String, Object>> properties = metadata.read("$.properties[*]");
    assertThat(properties).isNotEmpty();
    for (Map<String, Object> p : properties) {
      if (String.valueOf(p.get("name")).startsWith("spillway.")) {
        assertThat((String) p.get("description")).as("description of %s", p.get("name")).isNotBlank()
            .doesNotContain("{@"); // an IDE shows it as written: no javadoc markup
      }
    }
  }

  @Test
  void theDefaultsTheReadmeGivesAreInTheMetadata() {
    assertThat(defaultOf("spillway.slo")).isEqualTo(SpillwayProperties.DEFAULT_SLO_MILLIS + "ms");
    assertThat(defaultOf("spillway.jdbc.enabled")).isEqualTo(true);
    assertThat(defaultOf("spillway.excluded-paths"))
        .isEqualTo(new SpillwayProperties().getExcludedPaths());
    assertThat(defaultOf("spillway.scheme")).isEqualTo("spillway");
  }

  @Test
  void theSchemesAreOfferedAsValues() {
    List<String> values = metadata.read("$.hints[?(@.name == 'spillway.scheme')].values[*].value");
    assertThat(values).containsExactlyInAnyOrderElementsOf(SpillwayProperties.SCHEMES);
  }

  /**
   * Every property the metadata offers is one the start-up check knows: a setting an IDE completes
   * must not be logged at WARNING as unknown and ignored, nor listed so by the Actuator endpoint.
   * {@code spillway.endpoints} is a list of objects, set only through its elements' names.
   */
  @Test
  void noPropertyTheMetadataOffersIsReportedAsUnknown() {
    List<String> names = metadata.read("$.properties[*].name");
    org.springframework.mock.env.MockEnvironment environment =
        new org.springframework.mock.env.MockEnvironment();
    for (String name : names) {
      if (name.startsWith("spillway.") && !name.equals("spillway.endpoints")) {
        environment.setProperty(name, "1");
      }
    }
    assertThat(environment.getProperty("spillway.client.grpc-retry-to-replica")).isNotNull();
    assertThat(new io.spillway.spring.internal.UnknownProperties(environment).names()).isEmpty();
  }

  private Object defaultOf(String name) {
    List<Object> found = metadata.read("$.properties[?(@.name == '" + name + "')].defaultValue");
    assertThat(found).as("default of %s", name).hasSize(1);
    return found.get(0);
  }

  private static String readString(Path path) {
    try {
      return Files.readString(path);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
