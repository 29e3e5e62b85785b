package io.spillway.spring.internal;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.Environment;

/**
 * Finds {@code spillway.*} properties that no setting reads (a typo such as {@code spillway.sol})
 * and reports them at start-up, once, at WARNING: Spring Boot ignores unknown properties, and a
 * mistyped SLO would otherwise leave the default in force without a word. Names are compared in
 * Boot's uniform form, so {@code budget-target}, {@code budgetTarget} and {@code SPILLWAY_SLO} are
 * all recognised.
 *
 * <p>Immutable after construction.
 */
public final class UnknownProperties {

  private static final System.Logger LOG = System.getLogger(UnknownProperties.class.getName());
  private static final ConfigurationPropertyName ROOT = ConfigurationPropertyName.of("spillway");

  /** Every setting as the README's table spells it, {@code [i]} for a list index. */
  static final List<String> DOCUMENTED = List.of("enabled", "scheme", "slo", "parallelism",
      "reject-status", "excluded-paths", "budget.target", "budget.when-absent", "endpoints[i].path",
      "endpoints[i].name", "endpoints[i].enabled", "endpoints[i].slo", "endpoints[i].budget-target",
      "jdbc.enabled", "jfr.enabled", "jfr.admitted-sample-every", "client.enabled",
      "client.credits", "client.slo", "client.grpc-session-per-backend",
      "client.grpc-retry-to-replica");

  /**
   * Every setting, uniform form, {@code []} for a list index: the documented ones, each element of
   * excluded-paths, and the seed of the randomized tests, which the build sets as a system
   * property (accepted, not shown).
   */
  static final Set<String> KNOWN = known();

  private static Set<String> known() {
    Set<String> known = new TreeSet<>();
    for (String name : DOCUMENTED) {
      known.add(name.replace("-", "").replace("[i]", "[]"));
    }
    known.add("excludedpaths[]");
    known.add("seed");
    return Set.copyOf(known);
  }

  private final List<String> unknown;

  public UnknownProperties(Environment environment) {
    Set<String> found = new TreeSet<>();
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
      if (source instanceof IterableConfigurationPropertySource iterable) {
        iterable.stream().filter(ROOT::isAncestorOf).filter(n -> !KNOWN.contains(shape(n)))
            .forEach(n -> found.add(n.toString()));
      }
    }
    unknown = List.copyOf(found);
    if (!unknown.isEmpty()) {
      LOG.log(Level.WARNING, "unknown Spillway properties, ignored: {0} (known: {1})",
          unknown, String.join(", ", DOCUMENTED.stream().map(n -> "spillway." + n).toList()));
    }
  }

  /** The unknown names, sorted. */
  public List<String> names() {
    return unknown;
  }

  /** {@code spillway.endpoints[0].budget-target} becomes {@code endpoints[].budgettarget}. */
  static String shape(ConfigurationPropertyName name) {
    StringBuilder b = new StringBuilder();
    for (int i = ROOT.getNumberOfElements(); i < name.getNumberOfElements(); i++) {
      if (name.isNumericIndex(i)) {
        b.append("[]");
      } else {
        if (!b.isEmpty()) {
          b.append('.');
        }
        b.append(name.getElement(i, ConfigurationPropertyName.Form.UNIFORM));
      }
    }
    return b.toString();
  }
}
