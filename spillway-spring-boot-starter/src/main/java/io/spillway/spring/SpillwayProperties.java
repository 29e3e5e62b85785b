package io.spillway.spring;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The spillway.* properties. Every one has a default, so an application that adds the
 * starter and sets nothing is protected: the default scheme (io.spillway.credit.Spillway)
 * with a {@value #DEFAULT_SLO_MILLIS} ms SLO in front of every MVC and WebFlux endpoint except
 * /actuator/**.
 *
 * <p>The class validates itself (Spring Boot uses a properties object that is a {@link Validator}
 * as its validator), so a bad value fails start-up with the property's name and no validation
 * library is needed on the class path.
 *
 * <p>Not thread-safe: bound once at start-up, read afterwards.
 */
@ConfigurationProperties("spillway")
public class SpillwayProperties implements Validator {

  /** The SLO used when none is set. */
  public static final long DEFAULT_SLO_MILLIS = 100;

  /**
   * The longest SLO or budget target accepted: longer ones would overflow the gates' nanosecond
   * arithmetic, and no overload control acts on such a scale.
   */
  public static final Duration MAX_DURATION = Duration.ofDays(1);

  /**
   * Endpoint names the starter gives its own gates' meters: the default endpoint's, and the gRPC
   * servers'.
   */
  public static final Set<String> RESERVED_NAMES = Set.of("default", "grpc");

  /** The HTTP status of a refusal unless spillway.reject-status says otherwise. */
  public static final int DEFAULT_REJECT_STATUS = 429;

  /** The statuses {@link #setRejectStatus} accepts. */
  public static final Set<Integer> REJECT_STATUSES = Set.of(429, 503);

  /** The schemes {@link #setScheme} accepts by name. */
  public static final Set<String> SCHEMES = Set.of("spillway", "breakwater", "none");

  /** What a request that carries no Spillway-Budget header gets. */
  public enum NoBudget {
    /** The configured budget target less the p99 service time (Protego §3.2). */
    TARGET,
    /** No budget: budgeted locks in its handler wait as plain locks do. */
    UNLIMITED,
    /** Refused at once (spillway.reject-status, reason budget). */
    REJECT
  }

  /** Whether Spillway protects the application's endpoints. */
  private boolean enabled = true;

  /**
   * The admission scheme: spillway (credits for Spillway-aware clients, delay-based AQM
   * and an adaptive concurrency limit for plain clients), breakwater (credits only; plain
   * clients are refused), or none (measure and report, never refuse). An
   * OverloadScheme bean replaces it.
   */
  private String scheme = "spillway";

  /** The end-to-end latency objective of the endpoints; sets every parameter of the scheme. */
  private Duration slo = Duration.ofMillis(DEFAULT_SLO_MILLIS);

  /**
   * Requests the server runs at once, the floor of the concurrency limit; the available
   * processors by default.
   */
  private int parallelism = Runtime.getRuntime().availableProcessors();

  /** Paths (Ant patterns) no gate decides on. */
  private List<String> excludedPaths = new ArrayList<>(List.of("/actuator/**", "/error"));

  private final Budget budget = new Budget();

  /** Per-endpoint overrides, first match wins; a request that matches none uses the defaults. */
  private List<Endpoint> endpoints = new ArrayList<>();

  private final Jfr jfr = new Jfr();

  private final Jdbc jdbc = new Jdbc();

  private final Client client = new Client();

  /**
   * The HTTP status of a refused request: 429 (Too Many Requests, the HTTP form of the
   * RESOURCE_EXHAUSTED Spillway's gRPC refusals carry) or 503 (Service Unavailable). Either comes
   * with Retry-After and the Spillway-* headers, and the starter's clients honour both. Tomcat
   * closes an HTTP/1.1 connection after every 503 it sends, so under overload each refused
   * request of a keep-alive client costs the server a new connection as well.
   */
  private int rejectStatus = DEFAULT_REJECT_STATUS;

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getScheme() {
    return scheme;
  }

  public void setScheme(String scheme) {
    this.scheme = scheme == null ? null : scheme.trim().toLowerCase(Locale.ROOT);
  }

  public Duration getSlo() {
    return slo;
  }

  public void setSlo(Duration slo) {
    this.slo = slo;
  }

  public int getParallelism() {
    return parallelism;
  }

  public void setParallelism(int parallelism) {
    this.parallelism = parallelism;
  }

  public List<String> getExcludedPaths() {
    return excludedPaths;
  }

  public void setExcludedPaths(List<String> excludedPaths) {
    this.excludedPaths = excludedPaths;
  }

  public Budget getBudget() {
    return budget;
  }

  public List<Endpoint> getEndpoints() {
    return endpoints;
  }

  public void setEndpoints(List<Endpoint> endpoints) {
    this.endpoints = endpoints;
  }

  public Jfr getJfr() {
    return jfr;
  }

  public Jdbc getJdbc() {
    return jdbc;
  }

  public Client getClient() {
    return client;
  }

  public int getRejectStatus() {
    return rejectStatus;
  }

  public void setRejectStatus(int rejectStatus) {
    this.rejectStatus = rejectStatus;
  }

  /** Request budgets (protego-nsdi23 §3.2). */
  public static class Budget {
    /**
     * The end-to-end target a request without a Spillway-Budget header is given, before
     * the p99 service time is taken off; the SLO when unset.
     */
    private Duration target;

    /** What a request without a Spillway-Budget header gets. */
    private NoBudget whenAbsent = NoBudget.TARGET;

    public Duration getTarget() {
      return target;
    }

    public void setTarget(Duration target) {
      this.target = target;
    }

    public NoBudget getWhenAbsent() {
      return whenAbsent;
    }

    public void setWhenAbsent(NoBudget whenAbsent) {
      this.whenAbsent = whenAbsent;
    }
  }

  /** An override for the endpoints whose path matches {@link #getPath()}. */
  public static class Endpoint {
    /** Ant pattern of the request path, e.g. /api/search/**. */
    private String path;

    /** The name the endpoint's meters and JFR events carry; the pattern when unset. */
    private String name;

    /** Whether a gate decides on these endpoints. */
    private boolean enabled = true;

    /** The SLO of these endpoints; the global one when unset. */
    private Duration slo;

    /** Their budget target; their SLO when unset. */
    private Duration budgetTarget;

    public String getPath() {
      return path;
    }

    public void setPath(String path) {
      this.path = path;
    }

    public String getName() {
      return name;
    }

    public void setName(String name) {
      this.name = name;
    }

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getSlo() {
      return slo;
    }

    public void setSlo(Duration slo) {
      this.slo = slo;
    }

    public Duration getBudgetTarget() {
      return budgetTarget;
    }

    public void setBudgetTarget(Duration budgetTarget) {
      this.budgetTarget = budgetTarget;
    }
  }

  /** The connection pool's wait under the request's budget (protego-nsdi23 §3.2). */
  public static class Jdbc {
    /**
     * Whether DataSource beans that are HikariCP pools are wrapped so that a request whose
     * budget the pool's queue would outlast is refused at once (503) instead of waiting for a
     * connection.
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** JFR events (see the starter's README for a jfr print recipe). */
  public static class Jfr {
    /** Whether the starter emits its JFR events when a recording enables them. */
    private boolean enabled = true;

    /**
     * Admission events for admitted requests are sampled: one in this many. Rejections and budget
     * aborts are always offered to JFR, which throttles them (jdk.jfr.Throttle).
     */
    private int admittedSampleEvery = 1024;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public int getAdmittedSampleEvery() {
      return admittedSampleEvery;
    }

    public void setAdmittedSampleEvery(int admittedSampleEvery) {
      this.admittedSampleEvery = admittedSampleEvery;
    }
  }

  /**
   * The application's own clients: Spring Boot's RestClient.Builder, RestTemplateBuilder and
   * WebClient.Builder, and the channels Spring gRPC builds.
   */
  public static class Client {
    /**
     * Whether the clients built from them carry the budget of the request being served
     * (Spillway-Budget) and hold off a server that answered 429 or 503 for as long as it asked
     * (Spillway-Retry-Pushback-Ms, else Retry-After), failing those calls at once; and whether
     * Spring gRPC's channels get Spillway's sessions. False leaves every one as it is.
     */
    private boolean enabled = true;

    /**
     * Whether they also speak Spillway's credits with each server they call: a session per
     * server, requests waiting for its credits (Breakwater), the server's credit stream open.
     * A server that is not Spillway is detected on its first answer and gets requests at once.
     */
    private boolean credits = true;

    /**
     * The end-to-end SLO of the requests they send (over HTTP, and over Spring gRPC's channels),
     * which bounds a request's wait for a credit; spillway.slo if unset.
     */
    private Duration slo;

    /**
     * Whether each Spring gRPC channel keeps one session per backend its target resolves to: the
     * channel's load-balancing policy becomes spillway_per_backend, which spreads calls over the
     * backends as round_robin does (to the ready backend with the fewest calls waiting), and each
     * call waits for a credit of the backend it is sent to. False: one session per channel under
     * the channel's own policy, right only for a channel that reaches a single server.
     */
    private boolean grpcSessionPerBackend = true;

    /**
     * The share of calls, in (0, 1], that Spring gRPC channels with a session per backend may
     * retry once on another backend after a fast reject (Protego's retry to a replica, bounded by
     * a token budget); 0, the default, never retries.
     */
    private double grpcRetryToReplica;

    public boolean isEnabled() {
      return enabled;
    }

    public double getGrpcRetryToReplica() {
      return grpcRetryToReplica;
    }

    public void setGrpcRetryToReplica(double grpcRetryToReplica) {
      this.grpcRetryToReplica = grpcRetryToReplica;
    }

    public boolean isGrpcSessionPerBackend() {
      return grpcSessionPerBackend;
    }

    public void setGrpcSessionPerBackend(boolean grpcSessionPerBackend) {
      this.grpcSessionPerBackend = grpcSessionPerBackend;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public boolean isCredits() {
      return credits;
    }

    public void setCredits(boolean credits) {
      this.credits = credits;
    }

    public Duration getSlo() {
      return slo;
    }

    public void setSlo(Duration slo) {
      this.slo = slo;
    }
  }

  @Override
  public boolean supports(Class<?> type) {
    return SpillwayProperties.class.isAssignableFrom(type);
  }

  @Override
  public void validate(Object target, Errors errors) {
    SpillwayProperties p = (SpillwayProperties) target;
    if (p.scheme == null || !SCHEMES.contains(p.scheme)) {
      errors.rejectValue("scheme", "spillway.scheme", "must be one of " + SCHEMES
          + " (or declare an OverloadScheme bean)");
    }
    positive(errors, "slo", p.slo);
    if (!REJECT_STATUSES.contains(p.rejectStatus)) {
      errors.rejectValue("rejectStatus", "spillway.rejectStatus", "must be 429 or 503");
    }
    if (p.parallelism < 1) {
      errors.rejectValue("parallelism", "spillway.parallelism", "must be at least 1");
    }
    if (p.budget.target != null) {
      positive(errors, "budget.target", p.budget.target);
    }
    if (p.budget.whenAbsent == null) {
      errors.rejectValue("budget.whenAbsent", "spillway.budget", "must be set");
    }
    if (p.client.slo != null) {
      positive(errors, "client.slo", p.client.slo);
    }
    if (!(p.client.grpcRetryToReplica >= 0 && p.client.grpcRetryToReplica <= 1)) {
      errors.rejectValue("client.grpcRetryToReplica", "spillway.client",
          "must be in [0, 1] (0: no retry)");
    }
    if (p.jfr.admittedSampleEvery < 1) {
      errors.rejectValue("jfr.admittedSampleEvery", "spillway.jfr", "must be at least 1");
    }
    if (p.excludedPaths != null) {
      for (int i = 0; i < p.excludedPaths.size(); i++) {
        String why = pathProblem(p.excludedPaths.get(i));
        if (why != null) {
          errors.rejectValue("excludedPaths[" + i + "]", "spillway.excludedPaths", why);
        }
      }
    }
    // the endpoint tag of every meter and event: one per endpoint, else their counts merge
    Set<String> names = new java.util.HashSet<>(RESERVED_NAMES);
    for (int i = 0; i < p.endpoints.size(); i++) {
      Endpoint e = p.endpoints.get(i);
      String at = "endpoints[" + i + "].";
      if (e.path == null || e.path.isBlank()) {
        errors.rejectValue(at + "path", "spillway.endpoints", "must be set (an Ant pattern)");
      } else if (pathProblem(e.path) != null) {
        errors.rejectValue(at + "path", "spillway.endpoints", pathProblem(e.path));
      }
      String name = e.name != null ? e.name : e.path;
      if (e.name != null && e.name.isBlank()) {
        errors.rejectValue(at + "name", "spillway.endpoints", "must not be blank");
      } else if (name != null && !names.add(name)) {
        errors.rejectValue(at + "name", "spillway.endpoints", "must differ from " + RESERVED_NAMES
            + " and from every other endpoint's name (the path where no name is set): "
            + name + " is taken");
      }
      if (e.slo != null) {
        positive(errors, at + "slo", e.slo);
      }
      if (e.budgetTarget != null) {
        positive(errors, at + "budgetTarget", e.budgetTarget);
      }
    }
  }

  private static void positive(Errors errors, String field, Duration value) {
    if (value == null || value.isNegative() || value.isZero()) {
      errors.rejectValue(field, "spillway." + field, "must be a positive duration");
    } else if (value.compareTo(MAX_DURATION) > 0) {
      errors.rejectValue(field, "spillway." + field, "must be at most " + MAX_DURATION.toDays()
          + "d (the gates count in nanoseconds, and add and multiply them)");
    }
  }

  /**
   * Why {@code pattern} cannot decide on request paths, or {@code null} if it can: a path always
   * starts with /, and the Ant matcher compiles a segment only as a path first reaches it, so a
   * segment it cannot compile ({@code {id:[}}) would fail every request whose path reaches it.
   */
  private static String pathProblem(String pattern) {
    if (pattern == null || !pattern.startsWith("/")) {
      return PATH_RULE;
    }
    String uncompilable = EndpointRoutes.uncompilable(pattern);
    return uncompilable == null ? null : "must be an Ant pattern the matcher can compile; it "
        + uncompilable;
  }

  private static final String PATH_RULE =
      "must be an Ant pattern starting with / (request paths start with it; no path matches "
          + "another)";
}
