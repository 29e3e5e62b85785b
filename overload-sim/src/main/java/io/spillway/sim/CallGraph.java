package io.spillway.sim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A multi-service call graph (rajomon-nsdi25 §2.1, §5.1 Table 2): services with a number of
 * worker threads each, and interfaces, each a tree of calls rooted at a front-end service. A node
 * computes for a sampled time (the scenario's {@code service} distribution with the node's mean),
 * then calls its callees in parallel and answers once every callee has answered (fan-out, §3.2).
 * Services are shared between interfaces, so a hotspot in one slows every interface through it.
 *
 * <p>Scenario keys (all under {@code graph.}):
 * <pre>
 * graph.services   = frontend:2, search:1, geo:1     # name[:workers], workers default 1
 * graph.interfaces = search, reserve                # interface names, in order
 * graph.search     = frontend 20 -&gt; search; search 30 -&gt; geo, rate; geo 40; rate 40
 *                                                   # 'service compute_us [-&gt; callee, ...]', root first
 * graph.search.slo_us   = 2000                      # optional; default slo_us
 * graph.search.schedule = 0@0, 2.0@2000             # optional; default the scenario's schedule
 * graph.stall_ms        = 1500, 20                  # optional: every service stops for 20 ms at
 *                                                   # 1,500 ms (a host hiccup); the graph harness
 *                                                   # stops its services processes in schedule runs
 * </pre>
 * A service appears at most once in an interface's tree (the tree is acyclic by construction:
 * every node but the root is the callee of exactly one earlier-declared or later-declared node,
 * and a cycle is rejected).
 *
 * <p>Immutable and thread-safe.
 */
public final class CallGraph {

  /** A service: a server with {@code workers} threads, shared by every interface through it. */
  public record Service(String name, int index, int workers) { }

  /** One call in an interface's tree. */
  public record Node(Service service, ServiceTime compute, List<Node> callees) {

    /** Levels from this node down, this one included. */
    public int depth() {
      int d = 0;
      for (Node c : callees) {
        d = Math.max(d, c.depth());
      }
      return d + 1;
    }

    void collect(List<Node> into) {
      into.add(this);
      for (Node c : callees) {
        c.collect(into);
      }
    }
  }

  /**
   * An interface: its call tree, its SLO, and its own demand schedule (empty: the scenario's).
   */
  public record Interface(String name, int index, Node root, long sloNanos,
      List<Scenario.DemandStep> schedule) {

    /** Tiers of the tree (Table 2 "Depth"). */
    public int depth() {
      return root.depth();
    }

    /** The most nodes on one tier (Table 2 "Width"). */
    public int width() {
      List<Node> level = List.of(root);
      int width = 1;
      while (!level.isEmpty()) {
        List<Node> next = new ArrayList<>();
        for (Node n : level) {
          next.addAll(n.callees());
        }
        width = Math.max(width, next.size());
        level = next;
      }
      return width;
    }

    /** Every node of the tree, root first (depth-first). */
    public List<Node> nodes() {
      List<Node> all = new ArrayList<>();
      root.collect(all);
      return all;
    }
  }

  /**
   * A span in which no service's cores make progress: work under way is held up by its length and
   * nothing new starts. Messages still cross the network, clients still issue and prices still
   * update: what a stall of the servers' host (a pause the load generator does not share) looks
   * like from outside.
   */
  public record Stall(long startNanos, long lengthNanos) {
    public long endNanos() {
      return startNanos + lengthNanos;
    }
  }

  private final List<Service> services;
  private final List<Interface> interfaces;
  private final Stall stall;

  private CallGraph(List<Service> services, List<Interface> interfaces, Stall stall) {
    this.services = List.copyOf(services);
    this.interfaces = List.copyOf(interfaces);
    this.stall = stall;
  }

  /** The stall {@code graph.stall_ms} asks for, {@code null} if none. */
  public Stall stall() {
    return stall;
  }

  /** This graph without its stall: capacity is measured on a host that does not stall. */
  CallGraph withoutStall() {
    return stall == null ? this : new CallGraph(services, interfaces, null);
  }

  public List<Service> services() {
    return services;
  }

  public List<Interface> interfaces() {
    return interfaces;
  }

  public Service service(String name) {
    for (Service s : services) {
      if (s.name().equals(name)) {
        return s;
      }
    }
    throw new IllegalArgumentException("no service '" + name + "' in the graph");
  }

  public Interface iface(String name) {
    for (Interface i : interfaces) {
      if (i.name().equals(name)) {
        return i;
      }
    }
    throw new IllegalArgumentException("no interface '" + name + "' in the graph");
  }

  /** Whether a scenario describes a call graph (sets {@code graph.services}). */
  static boolean present(Scenario scenario) {
    return scenario.rawGraphValue("graph.services") != null;
  }

  /** Parses and validates the {@code graph.*} keys of a scenario. */
  static CallGraph parse(Scenario scenario) {
    String servicesText = scenario.rawGraphValue("graph.services");
    if (servicesText == null || servicesText.isBlank()) {
      throw Scenario.invalid("graph.services", "name at least one service");
    }
    Map<String, Service> services = new LinkedHashMap<>();
    for (String item : servicesText.split(",")) {
      String s = item.strip();
      if (s.isEmpty()) {
        continue;
      }
      String name = s;
      int workers = 1;
      int colon = s.indexOf(':');
      if (colon >= 0) {
        name = s.substring(0, colon).strip();
        try {
          workers = Integer.parseInt(s.substring(colon + 1).strip());
        } catch (NumberFormatException e) {
          throw Scenario.invalid("graph.services", "workers of '" + name + "' must be a whole number");
        }
      }
      checkName("graph.services", name);
      if (workers < 1) {
        throw Scenario.invalid("graph.services", "'" + name + "' needs at least one worker");
      }
      if (services.containsKey(name)) {
        throw Scenario.invalid("graph.services", "service '" + name + "' listed twice");
      }
      services.put(name, new Service(name, services.size(), workers));
    }
    String interfacesText = scenario.rawGraphValue("graph.interfaces");
    if (interfacesText == null || interfacesText.isBlank()) {
      throw Scenario.invalid("graph.interfaces", "name at least one interface");
    }
    List<Interface> interfaces = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    ServiceTime.Kind kind = scenario.service().kind();
    for (String item : interfacesText.split(",")) {
      String name = item.strip();
      if (name.isEmpty()) {
        continue;
      }
      checkName("graph.interfaces", name);
      if (!seen.add(name)) {
        throw Scenario.invalid("graph.interfaces", "interface '" + name + "' listed twice");
      }
      String key = "graph." + name;
      String tree = scenario.rawGraphValue(key);
      if (tree == null || tree.isBlank()) {
        throw Scenario.invalid(key, "describe the interface's calls: 'svc compute_us -> callee, ...; ...'");
      }
      Node root = parseTree(key, tree, services, kind);
      long slo = scenario.sloNanos();
      String sloText = scenario.rawGraphValue(key + ".slo_us");
      if (sloText != null) {
        double us = parse(key + ".slo_us", sloText);
        if (!(us > 0)) {
          throw Scenario.invalid(key + ".slo_us", "must be positive");
        }
        slo = Math.round(us * 1_000);
      }
      String scheduleText = scenario.rawGraphValue(key + ".schedule");
      List<Scenario.DemandStep> schedule = scheduleText == null ? List.of()
          : Scenario.parseSchedule(key + ".schedule", scheduleText);
      if (!schedule.isEmpty() && scenario.durationNanos() <= schedule.getLast().startNanos()) {
        throw Scenario.invalid(key + ".schedule", "duration_ms must extend past its last step");
      }
      interfaces.add(new Interface(name, interfaces.size(), root, slo, schedule));
    }
    for (String key : scenario.graphKeys()) {
      String rest = key.substring("graph.".length());
      if (rest.equals("services") || rest.equals("interfaces") || rest.equals("core1")
          || rest.equals("stall_ms")) {
        continue; // graph.core1: the real harness's placement; the simulator has no shared cores
      }
      String iface = rest.contains(".") ? rest.substring(0, rest.indexOf('.')) : rest;
      String suffix = rest.contains(".") ? rest.substring(rest.indexOf('.') + 1) : "";
      if (!seen.contains(iface) || !(suffix.isEmpty() || suffix.equals("slo_us")
          || suffix.equals("schedule"))) {
        throw Scenario.invalid(key, "unknown graph key; expected graph.services, graph.interfaces, graph.core1, "
            + "graph.stall_ms, graph.<interface>, graph.<interface>.slo_us or graph.<interface>.schedule");
      }
    }
    return new CallGraph(new ArrayList<>(services.values()), interfaces,
        parseStall(scenario.rawGraphValue("graph.stall_ms")));
  }

  /** {@code start_ms, length_ms}, both whole numbers, the length at least 1. */
  private static Stall parseStall(String text) {
    if (text == null) {
      return null;
    }
    String key = "graph.stall_ms";
    String[] parts = text.split(",");
    if (parts.length != 2) {
      throw Scenario.invalid(key, "expected 'start_ms, length_ms', got '" + text + "'");
    }
    long start;
    long length;
    try {
      start = Long.parseLong(parts[0].strip());
      length = Long.parseLong(parts[1].strip());
    } catch (NumberFormatException e) {
      throw Scenario.invalid(key, "expected two whole numbers of milliseconds, got '" + text + "'");
    }
    if (start < 0 || length < 1 || start > Long.MAX_VALUE / 2_000_000
        || length > Long.MAX_VALUE / 2_000_000) {
      throw Scenario.invalid(key, "start must be >= 0 and length >= 1 ms, got '" + text + "'");
    }
    return new Stall(start * 1_000_000, length * 1_000_000);
  }

  private static Node parseTree(String key, String text, Map<String, Service> services,
      ServiceTime.Kind kind) {
    Map<String, Clause> clauses = new LinkedHashMap<>();
    for (String raw : text.split(";")) {
      String clause = raw.strip();
      if (clause.isEmpty()) {
        continue;
      }
      String head = clause;
      List<String> callees = List.of();
      int arrow = clause.indexOf("->");
      if (arrow >= 0) {
        head = clause.substring(0, arrow).strip();
        callees = new ArrayList<>();
        for (String c : clause.substring(arrow + 2).split(",")) {
          if (!c.isBlank()) {
            callees.add(c.strip());
          }
        }
        if (callees.isEmpty()) {
          throw Scenario.invalid(key, "'" + clause + "': name the callees after '->'");
        }
      }
      String[] parts = head.split("\\s+");
      if (parts.length != 2) {
        throw Scenario.invalid(key, "'" + clause + "': expected 'service compute_us [-> callee, ...]'");
      }
      Service service = services.get(parts[0]);
      if (service == null) {
        throw Scenario.invalid(key, "unknown service '" + parts[0] + "' (not in graph.services)");
      }
      double us = parse(key, parts[1]);
      if (!(us > 0)) {
        throw Scenario.invalid(key, "'" + parts[0] + "': compute time must be positive");
      }
      if (clauses.containsKey(service.name())) {
        throw Scenario.invalid(key, "service '" + service.name() + "' described twice");
      }
      clauses.put(service.name(), new Clause(service, Math.round(us * 1_000), callees));
    }
    if (clauses.isEmpty()) {
      throw Scenario.invalid(key, "no calls described");
    }
    Map<String, Integer> callers = new HashMap<>();
    for (Clause c : clauses.values()) {
      for (String callee : c.callees()) {
        if (!clauses.containsKey(callee)) {
          throw Scenario.invalid(key, "'" + c.service().name() + "' calls '" + callee
              + "', which has no clause of its own");
        }
        if (callers.merge(callee, 1, Integer::sum) > 1) {
          throw Scenario.invalid(key, "'" + callee + "' is called from two places; a service "
              + "appears once per interface");
        }
      }
    }
    String root = clauses.keySet().iterator().next();
    if (callers.containsKey(root)) {
      throw Scenario.invalid(key, "the root '" + root + "' (first clause) must not be called");
    }
    Set<String> reached = new HashSet<>();
    Node tree = build(key, root, clauses, kind, reached, new HashSet<>());
    if (reached.size() != clauses.size()) {
      Set<String> unreached = new HashSet<>(clauses.keySet());
      unreached.removeAll(reached);
      throw Scenario.invalid(key, "not reachable from the root '" + root + "': " + unreached);
    }
    return tree;
  }

  private record Clause(Service service, long computeNanos, List<String> callees) { }

  private static Node build(String key, String name, Map<String, Clause> clauses,
      ServiceTime.Kind kind, Set<String> reached, Set<String> path) {
    if (!path.add(name)) {
      throw Scenario.invalid(key, "call cycle through '" + name + "'");
    }
    reached.add(name);
    Clause c = clauses.get(name);
    List<Node> callees = new ArrayList<>();
    for (String callee : c.callees()) {
      callees.add(build(key, callee, clauses, kind, reached, path));
    }
    path.remove(name);
    return new Node(c.service(), new ServiceTime(kind, c.computeNanos()),
        Collections.unmodifiableList(callees));
  }

  private static void checkName(String key, String name) {
    if (!name.matches("[A-Za-z][A-Za-z0-9_-]*")) {
      throw Scenario.invalid(key, "'" + name + "' is not a valid name (letters, digits, _ and -)");
    }
  }

  private static double parse(String key, String text) {
    try {
      return Double.parseDouble(text.strip());
    } catch (NumberFormatException e) {
      throw Scenario.invalid(key, "expected a number, got '" + text + "'");
    }
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder();
    for (Interface i : interfaces) {
      b.append(i.name()).append(": depth ").append(i.depth()).append(", width ")
          .append(i.width()).append(", ").append(i.nodes().size()).append(" nodes\n");
    }
    return b.toString();
  }
}
