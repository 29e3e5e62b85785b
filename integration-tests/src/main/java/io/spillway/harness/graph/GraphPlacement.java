package io.spillway.harness.graph;

import io.spillway.sim.CallGraph;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Which services run in which services process: by default every service in one process (pinned
 * to core 0); with the scenario key {@value #KEY} ({@code graph.core1 = search, geo, rate}) the
 * services named there run in a second process pinned to core 1, the rest in the first.
 * rajomon-nsdi25 (§4, §5.6) gives every service its own resources; on a two-core machine this at
 * least separates a subtree's CPU from the others', so that one interface's surge does not slow
 * another through the core they would share.
 *
 * <p>The core-1 set must be closed downward: every callee of a core-1 service is on core 1 too.
 * So the core-1 process needs no other process's ports and starts first; the core-0 process is
 * then given its ports ({@code GraphServer --remote}).
 *
 * <p>The key is the real harness's alone: the simulator accepts it and ignores it, as it gives
 * every service its own cores.
 */
final class GraphPlacement {

  /** The scenario key naming the services of the core-1 process. */
  static final String KEY = "graph.core1";

  private final List<String> core0;
  private final List<String> core1;

  private GraphPlacement(List<String> core0, List<String> core1) {
    this.core0 = List.copyOf(core0);
    this.core1 = List.copyOf(core1);
  }

  /** Every service of {@code graph} in one process. */
  static GraphPlacement single(CallGraph graph) {
    return new GraphPlacement(graph.services().stream().map(CallGraph.Service::name).toList(), List.of());
  }

  /**
   * The placement {@code value} (the key's value: service names, comma-separated) describes; a
   * blank or absent value keeps every service in one process.
   *
   * @throws IllegalArgumentException naming {@value #KEY} for an unknown or repeated service, a
   *     core-1 service that calls one on core 0, or a value that leaves core 0 no service
   */
  static GraphPlacement parse(String value, CallGraph graph) {
    if (value == null || value.isBlank()) {
      return single(graph);
    }
    Set<String> known = graph.services().stream().map(CallGraph.Service::name)
        .collect(Collectors.toCollection(LinkedHashSet::new));
    Set<String> named = new LinkedHashSet<>();
    for (String raw : value.split(",")) {
      String name = raw.strip();
      if (name.isEmpty()) {
        throw invalid("empty service name in '" + value.strip() + "'");
      }
      if (!known.contains(name)) {
        throw invalid("unknown service '" + name + "'; graph.services has " + String.join(", ", known));
      }
      if (!named.add(name)) {
        throw invalid("service '" + name + "' named twice");
      }
    }
    List<String> problems = callsOut(graph, named, named::contains);
    if (!problems.isEmpty()) {
      throw invalid("every callee of a core-1 service must be on core 1 too (the core-1 process starts "
          + "first, knowing no other ports), but " + String.join(", ", problems));
    }
    List<String> core0 = new ArrayList<>();
    List<String> core1 = new ArrayList<>();
    for (String name : known) {
      (named.contains(name) ? core1 : core0).add(name);
    }
    if (core0.isEmpty()) {
      throw invalid("leave at least one service (the front-ends) on core 0");
    }
    return new GraphPlacement(core0, core1);
  }

  /**
   * The calls from a service in {@code from} to a callee {@code reachable} does not accept, each as
   * "caller calls callee in interface".
   */
  static List<String> callsOut(CallGraph graph, Set<String> from, Predicate<String> reachable) {
    List<String> calls = new ArrayList<>();
    for (CallGraph.Interface i : graph.interfaces()) {
      for (CallGraph.Node node : i.nodes()) {
        if (!from.contains(node.service().name())) {
          continue;
        }
        for (CallGraph.Node callee : node.callees()) {
          if (!reachable.test(callee.service().name())) {
            calls.add(node.service().name() + " calls " + callee.service().name() + " in " + i.name());
          }
        }
      }
    }
    return calls;
  }

  private static IllegalArgumentException invalid(String message) {
    return new IllegalArgumentException("scenario key '" + KEY + "': " + message);
  }

  /** Whether some services run in a second process (on core 1). */
  boolean split() {
    return !core1.isEmpty();
  }

  /** The services of the first process (core 0), in the graph's order. */
  List<String> core0() {
    return core0;
  }

  /** The services of the second process (core 1), in the graph's order; empty if not {@link #split}. */
  List<String> core1() {
    return core1;
  }

  @Override
  public String toString() {
    return split() ? "core 0: " + String.join(", ", core0) + "; core 1: " + String.join(", ", core1)
        : "one process";
  }
}
