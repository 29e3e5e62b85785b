package io.spillway.spring;

import java.util.ArrayList;
import java.util.List;
import org.springframework.util.AntPathMatcher;

/**
 * Which of a server's gates decides on a path, as its credit stream's {@code Spillway-Routes}
 * header tells a client session: entries in the server's own matching order ({@link
 * SpillwayHttpGate#endpointFor}: excluded paths, then the overrides, then the default), each the
 * gate's index, or {@code -} where no gate that issues credits decides, and an Ant pattern:
 *
 * <pre>
 * Spillway-Routes: - /actuator/**, - /error, 1 /orders/**, 0 /**
 * </pre>
 *
 * <p>A pattern's {@code %}, {@code ,} and spaces are sent as {@code %25}, {@code %2C} and {@code
 * %20}. The server keeps a ledger of a session's credits per gate (breakwater-osdi20 §3.3: a
 * window per client and server), so the session keeps a window per gate too; a request on a
 * path of no such gate goes without waiting for a credit. Without the header (one gate, or a
 * server that does not send it) every path is gate 0's.
 *
 * <p>Immutable and thread-safe.
 */
final class EndpointRoutes {

  /** No routes: every path is gate 0's. */
  static final EndpointRoutes ONE_GATE = new EndpointRoutes(List.of(), List.of());

  /** The most gates a client keeps windows for; a route beyond it is malformed. */
  static final int MAX_GATES = 256;

  private static final Matcher MATCHER = new Matcher();

  private final List<String> patterns;
  private final List<Integer> gates;

  private EndpointRoutes(List<String> patterns, List<Integer> gates) {
    this.patterns = patterns;
    this.gates = gates;
  }

  /**
   * The gate that decides on {@code path}: its index, or -1 where none that issues credits does.
   * A path that no route matches is gate 0's.
   */
  int gateFor(String path) {
    for (int i = 0; i < patterns.size(); i++) {
      if (MATCHER.match(patterns.get(i), path)) {
        return gates.get(i);
      }
    }
    return 0;
  }

  /** The header's value for {@code gates} (index or -1) and {@code patterns}, in order. */
  static String format(List<Integer> gates, List<String> patterns) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < patterns.size(); i++) {
      if (i > 0) {
        b.append(", ");
      }
      int g = gates.get(i);
      b.append(g < 0 ? "-" : Integer.toString(g)).append(' ').append(escape(patterns.get(i)));
    }
    return b.toString();
  }

  /**
   * Reads a {@code Spillway-Routes} value; {@code null} or blank is {@link #ONE_GATE}.
   *
   * @throws IllegalArgumentException if it is malformed
   */
  static EndpointRoutes parse(String header) {
    if (header == null || header.isBlank()) {
      return ONE_GATE;
    }
    List<String> patterns = new ArrayList<>();
    List<Integer> gates = new ArrayList<>();
    for (String entry : header.split(",")) {
      String e = entry.trim();
      int space = e.indexOf(' ');
      if (space <= 0 || space == e.length() - 1) {
        throw new IllegalArgumentException("route without a gate and a pattern: '" + e + "'");
      }
      String gate = e.substring(0, space);
      int g;
      if (gate.equals("-")) {
        g = -1;
      } else {
        try {
          g = Integer.parseInt(gate);
        } catch (NumberFormatException x) {
          throw new IllegalArgumentException("route gate is not an index: '" + gate + "'");
        }
        if (g < 0 || g >= MAX_GATES) {
          throw new IllegalArgumentException("route gate out of range [0, " + MAX_GATES + "): " + g);
        }
      }
      String pattern = unescape(e.substring(space + 1).trim());
      String why = uncompilable(pattern);
      if (why != null) {
        throw new IllegalArgumentException("route pattern " + why);
      }
      gates.add(g);
      patterns.add(pattern);
    }
    return new EndpointRoutes(List.copyOf(patterns), List.copyOf(gates));
  }

  /**
   * Why the Ant matcher cannot match {@code pattern} ({@code "cannot be matched: '<pattern>'
   * (<reason>)"}), or {@code null} if it can. The server's own patterns ({@code
   * spillway.endpoints[i].path}, {@code spillway.excluded-paths}) are checked with it at start-up,
   * as a client checks the routes it is sent.
   */
  static String uncompilable(String pattern) {
    try {
      MATCHER.check(pattern);
      return null;
    } catch (IllegalArgumentException e) {
      return "cannot be matched: '" + pattern + "' ("
          + String.valueOf(e.getMessage()).lines().findFirst().orElse("") + ")";
    }
  }

  /**
   * The Ant matcher, which compiles a pattern's segments as a path first reaches them: a segment
   * it cannot compile ({@code {id:[}}) would fail every request whose path reaches it.
   */
  private static final class Matcher extends AntPathMatcher {

    /** @throws IllegalArgumentException if a segment of {@code pattern} cannot be compiled */
    void check(String pattern) {
      for (String segment : tokenizePattern(pattern)) {
        getStringMatcher(segment);
      }
    }
  }

  private static String escape(String pattern) {
    return pattern.replace("%", "%25").replace(",", "%2C").replace(" ", "%20");
  }

  private static String unescape(String pattern) {
    return pattern.replace("%20", " ").replace("%2C", ",").replace("%25", "%");
  }
}
