package io.spillway.spring;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.ServiceTimeTracker;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.spring.internal.AdmissionEvent;
import io.spillway.spring.internal.BudgetAbortEvent;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.springframework.util.AntPathMatcher;

/**
 * Admission for HTTP requests, shared by the servlet filter and the WebFilter: finds a request's
 * endpoint, reads its {@code Spillway-*} headers, gives it a budget, asks the endpoint's
 * {@link ServerGate}, and ends the permit exactly once when the request ends.
 *
 * <ul>
 *   <li><b>Endpoints</b>: the first {@link Endpoint} whose Ant pattern matches the path, else the
 *       default one; paths in the excluded list (by default {@code /actuator/**} and
 *       {@code /error}) and disabled endpoints are not decided on. Each endpoint has its own gate
 *       (its own SLO), all steered by the same queueing delay: they share the server's CPU.
 *   <li><b>Headers</b>: {@link SpillwayHttpHeaders}; a malformed value counts as absent, never
 *       fails the request, and is logged at WARNING once per client (by remote address) — a
 *       client that sends one malformed header usually sends it on every request.
 *   <li><b>Budget</b> (protego-nsdi23 §3.2: budget = target − p99 service − p99 network): the
 *       request's {@code Spillway-Budget}, or, without one, what {@link
 *       SpillwayProperties.NoBudget} says: the endpoint's target less the p99 of its service time
 *       (the network share is left in the target), no budget, or a refusal. The budget is bound to
 *       {@link RequestBudget#CURRENT} around the handler by the filter, so {@code BudgetedLock}s
 *       in the service layer work unchanged.
 *   <li><b>Rejects</b>: the filters answer {@code spillway.reject-status} ({@code 429} by default,
 *       or {@code 503}) with {@code Retry-After} and {@code Spillway-Retry-Pushback-Ms} from the
 *       current queueing delay (at least 1 s / 1 ms), and the response fields; see {@link
 *       Admission#writeRejectHeaders}.
 * </ul>
 *
 * <p>Thread-safe; one instance serves every request of the application.
 */
public final class SpillwayHttpGate implements AutoCloseable {

  static final System.Logger LOG = System.getLogger(SpillwayHttpGate.class.getName());
  private static final long NANOS_PER_MS = 1_000_000;
  private static final long NANOS_PER_S = 1_000_000_000;
  private static final int MAX_CLIENTS_REMEMBERED = 4096;

  private final Ticker ticker;
  private final QueueDelaySignal queueDelay;
  private final List<Endpoint> overrides;
  private final Endpoint defaults;
  private final List<String> excluded;
  private final SpillwayProperties.NoBudget noBudget;
  private final AntPathMatcher matcher = new AntPathMatcher();
  private final Set<String> warnedClients = ConcurrentHashMap.newKeySet();
  private final AtomicLong malformedWarnings = new AtomicLong();
  private final boolean jfr;
  private final int sampleEvery;
  private final AtomicInteger sampleCounter = new AtomicInteger();
  private final java.util.concurrent.atomic.LongAdder inFlight =
      new java.util.concurrent.atomic.LongAdder();
  private final String routes;

  /**
   * @param ticker the clock, read once at admission and once at the end of each request
   * @param queueDelay the server's queueing delay, for the pushback on rejects and JFR
   * @param defaults the endpoint of paths no override matches
   * @param overrides per-path endpoints, first match wins
   * @param excluded Ant patterns of paths no gate decides on
   * @param noBudget what a request without a {@code Spillway-Budget} gets
   * @param jfr whether to offer JFR events
   * @param admittedSampleEvery one admitted request in this many is offered to JFR
   */
  public SpillwayHttpGate(Ticker ticker, QueueDelaySignal queueDelay, Endpoint defaults,
      List<Endpoint> overrides, List<String> excluded, SpillwayProperties.NoBudget noBudget,
      boolean jfr, int admittedSampleEvery) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.queueDelay = Objects.requireNonNull(queueDelay, "queueDelay");
    this.defaults = Objects.requireNonNull(defaults, "defaults");
    this.overrides = List.copyOf(overrides);
    this.excluded = List.copyOf(excluded);
    this.noBudget = Objects.requireNonNull(noBudget, "noBudget");
    this.jfr = jfr;
    if (admittedSampleEvery < 1) {
      throw new IllegalArgumentException("admittedSampleEvery must be at least 1");
    }
    this.sampleEvery = admittedSampleEvery;
    this.routes = routesOf(this.defaults, this.overrides, this.excluded);
  }

  /**
   * Which gate decides on which paths, for a client session's windows ({@link
   * SpillwayHttpHeaders#ROUTES}, sent with each credit stream): the excluded patterns, then each
   * override, then the default's {@code /**}, in the order {@link #endpointFor} tries them. A
   * gate is named by its index, the default endpoint's 0 and the overrides' 1, 2, ... in order,
   * the index whose control channel carries its explicit credits ({@code HttpCreditStreams}); a
   * path no gate decides on, or whose gate issues no credits, is {@code -}.
   */
  public String routes() {
    return routes;
  }

  private static String routesOf(Endpoint defaults, List<Endpoint> overrides,
      List<String> excluded) {
    List<Integer> gates = new java.util.ArrayList<>();
    List<String> patterns = new java.util.ArrayList<>();
    for (String pattern : excluded) {
      gates.add(-1);
      patterns.add(pattern);
    }
    for (int i = 0; i < overrides.size(); i++) {
      Endpoint e = overrides.get(i);
      gates.add(e.enabled && e.issuesCredits ? i + 1 : -1);
      patterns.add(e.pattern);
    }
    gates.add(defaults.enabled && defaults.issuesCredits ? 0 : -1);
    patterns.add("/**");
    return EndpointRoutes.format(gates, patterns);
  }

  /**
   * The index that names {@code endpoint}'s gate in {@link #routes} and on the credit stream: 0
   * for the default endpoint, 1, 2, ... for the overrides in order; -1 if it is none of them.
   */
  public int creditIndex(Endpoint endpoint) {
    if (endpoint == defaults) {
      return 0;
    }
    for (int i = 0; i < overrides.size(); i++) {
      if (overrides.get(i) == endpoint) {
        return i + 1;
      }
    }
    return -1;
  }

  /** The endpoint that decides on {@code path}, or {@code null} if none does. */
  public Endpoint endpointFor(String path) {
    for (String pattern : excluded) {
      if (matcher.match(pattern, path)) {
        return null;
      }
    }
    for (Endpoint e : overrides) {
      if (matcher.match(e.pattern, path)) {
        return e.enabled ? e : null;
      }
    }
    return defaults.enabled ? defaults : null;
  }

  /**
   * Whether any endpoint's scheme issues credits: then the filters serve the sessions' credit
   * streams.
   */
  public boolean issuesCredits() {
    return endpoints().stream().anyMatch(e -> e.issuesCredits);
  }

  /** The default endpoint, then the overrides. */
  public List<Endpoint> endpoints() {
    return java.util.stream.Stream.concat(java.util.stream.Stream.of(defaults), overrides.stream())
        .toList();
  }

  /** The clock this gate reads. */
  public Ticker ticker() {
    return ticker;
  }

  /** The queueing delay the gates steer by. */
  public QueueDelaySignal queueDelay() {
    return queueDelay;
  }

  /** Admitted requests whose permit has not ended yet. */
  public long inFlight() {
    return inFlight.sum();
  }

  /** Malformed-header warnings logged so far (at most one per client). */
  public long malformedHeaderWarnings() {
    return malformedWarnings.get();
  }

  /**
   * Decides on a request of {@code endpoint}.
   *
   * <p>The request's origin ({@link RequestMetadata#origin}) is its connection, {@code remote},
   * which the client does not choose. Its session id it does choose, and a client that invents one
   * for every request would register a session with every request; so a credit gate (the default
   * scheme's) keeps the sessions registered from one origin on probation until they come back, at
   * most 256 of them at once, and refuses the registering requests beyond that for credit
   * (BreakwaterServerGate's class comment, "Newcomers"; docs/results/reliability.md, "Session
   * floods"). An honest session leaves probation with its second request, on whichever connection
   * that comes. Behind a reverse proxy the connections are the proxy's, shared by its clients, so
   * the bound holds per proxy connection; where the application honours forwarded headers
   * ({@code server.forward-headers-strategy}), the remote address is the one they name.
   *
   * @param header the request's header by name, {@code null} when absent
   * @param remote the connection it came on (remote address and port), or {@code null} if the
   *     server cannot say: then it names no origin, and its sessions register unbounded, as in the
   *     paper. The address also names the client when a malformed header is logged once per client.
   */
  public Admission admit(Endpoint endpoint, Function<String, String> header,
      InetSocketAddress remote) {
    RequestMetadata request = new RequestMetadata();
    String problem = SpillwayHttpHeaders.readRequest(header, request);
    if (problem != null) {
      warnOnce(remote == null ? null : remote.getHostString(), problem);
    }
    request.origin(originOf(remote));
    long now = ticker.read();
    if (request.budgetNanos() == Long.MAX_VALUE) {
      switch (noBudget) {
        case TARGET -> request.budgetNanos(
            Math.max(0, endpoint.targetBudgetNanos - endpoint.serviceTimes.p99Nanos(now)));
        case UNLIMITED -> { }
        case REJECT -> {
          endpoint.stats.onAdmission(Status.REJECTED_BUDGET);
          return rejected(endpoint, new RefusedPermit(endpoint.stats), request, now);
        }
      }
    }
    ServerPermit permit = endpoint.gate.admit(request, now);
    if (!permit.isAdmitted()) {
      return rejected(endpoint, permit, request, now);
    }
    Admission a = new Admission(endpoint, request, permit, null, now);
    inFlight.increment();
    if (jfr && sampleCounter.incrementAndGet() % sampleEvery == 0) {
      offerEvent(a, sampleEvery);
    }
    return a;
  }

  /**
   * {@code remote} as an origin: its address's text and its port, packed so that two connections
   * share an origin only if their addresses' text hashes alike; never 0, which means none.
   */
  static long originOf(InetSocketAddress remote) {
    if (remote == null) {
      return 0;
    }
    return (remote.getHostString().hashCode() & 0xFFFF_FFFFL) << 17 | (long) remote.getPort() << 1
        | 1;
  }

  private Admission rejected(Endpoint endpoint, ServerPermit permit, RequestMetadata request,
      long now) {
    ResponseMetadata response = new ResponseMetadata().sessionId(request.sessionId())
        .requestId(request.requestId());
    permit.complete(Outcome.DROPPED, now, response);
    Admission a = new Admission(endpoint, request, permit, response, now);
    if (jfr) {
      offerEvent(a, 1);
    }
    return a;
  }

  private void offerEvent(Admission a, int sampledOneIn) {
    AdmissionEvent e = new AdmissionEvent();
    if (e.isEnabled()) {
      e.endpoint = a.endpoint.name;
      e.decision = a.permit.isAdmitted() ? "ok" : GateStats.reason(a.permit.status());
      e.queueingDelay = queueDelay.queueingDelayNanos(a.at);
      e.budget = a.request.budgetNanos();
      e.sampledOneIn = sampledOneIn;
      e.commit();
    }
  }

  private void warnOnce(String client, String problem) {
    String key = client == null ? "unknown" : client;
    if (warnedClients.size() < MAX_CLIENTS_REMEMBERED && warnedClients.add(key)) {
      malformedWarnings.incrementAndGet();
      LOG.log(Level.WARNING, "malformed Spillway header from {0}, ignored (the request is "
          + "served; further ones from this client are logged at DEBUG): {1}", key, problem);
    } else {
      LOG.log(Level.DEBUG, "malformed Spillway header from {0}, ignored: {1}", key, problem);
    }
  }

  /**
   * A session left (its credit stream ended, or it said so): its unused credits return to each
   * endpoint's pool. Requests of the session in flight still end normally.
   */
  public void deregister(long sessionId) {
    long now = ticker.read();
    for (Endpoint e : endpoints()) {
      e.gate.deregister(sessionId, now);
    }
  }

  /**
   * A demand report of the session for the gate with index {@code creditIndex} ({@link #routes}),
   * which no request could carry: the gate's {@link ServerGate#onDemand} takes it, and answers, if
   * at all, with an explicit credit on the session's stream. A gate that stamps its credits
   * restates the session's window, which is what a client whose window is in doubt asks for
   * (ResponseMetadata's class comment).
   *
   * @return whether a gate with credits has that index
   */
  public boolean demand(int creditIndex, long sessionId, int demand) {
    Endpoint e = creditIndex == 0 ? defaults
        : creditIndex > 0 && creditIndex <= overrides.size() ? overrides.get(creditIndex - 1)
        : null;
    if (e == null || !e.enabled || !e.issuesCredits) {
      return false;
    }
    e.gate.onDemand(sessionId, demand, ticker.read());
    return true;
  }

  /** Stops every endpoint's control loop. */
  @Override
  public void close() {
    for (Endpoint e : endpoints()) {
      e.gate.close();
    }
  }

  /**
   * One endpoint: its gate, SLO, budget target, service-time p99 and counters. Thread-safe.
   */
  public static final class Endpoint {
    final String name;
    final String pattern;
    final boolean enabled;
    final ServerGate gate;
    final long sloNanos;
    final long targetBudgetNanos;
    final GateStats stats;
    final ServiceTimeTracker serviceTimes = new ServiceTimeTracker();
    final boolean issuesCredits;

    /**
     * @param name the low-cardinality name of its meters and events
     * @param pattern its Ant pattern ({@code /**} for the default endpoint)
     * @param enabled whether a gate decides on its requests
     * @param gate its started gate, reporting to {@code stats}
     * @param sloNanos its SLO
     * @param targetBudgetNanos the budget target of requests without one
     * @param stats where {@code gate} reports
     * @param issuesCredits whether its scheme {@linkplain
     *     io.spillway.api.OverloadScheme#issuesCredits issues credits}
     */
    public Endpoint(String name, String pattern, boolean enabled, ServerGate gate, long sloNanos,
        long targetBudgetNanos, GateStats stats, boolean issuesCredits) {
      this.issuesCredits = issuesCredits;
      this.name = Objects.requireNonNull(name, "name");
      this.pattern = Objects.requireNonNull(pattern, "pattern");
      this.enabled = enabled;
      this.gate = Objects.requireNonNull(gate, "gate");
      this.sloNanos = sloNanos;
      this.targetBudgetNanos = targetBudgetNanos;
      this.stats = Objects.requireNonNull(stats, "stats");
    }

    public String name() {
      return name;
    }

    public String pattern() {
      return pattern;
    }

    public boolean enabled() {
      return enabled;
    }

    public ServerGate gate() {
      return gate;
    }

    public long sloNanos() {
      return sloNanos;
    }

    public GateStats stats() {
      return stats;
    }

    /** The running p99 of its handlers' service time at {@code nowNanos}. */
    public long p99ServiceNanos(long nowNanos) {
      return serviceTimes.p99Nanos(nowNanos);
    }
  }

  /**
   * One request's decision. A rejected one is complete already; an admitted one must be
   * {@link #end ended} once, which later calls ignore (the servlet container and an async
   * listener may both report the end of one request).
   *
   * <p>Thread-safe.
   */
  public final class Admission {
    final Endpoint endpoint;
    final RequestMetadata request;
    final ServerPermit permit;
    final ResponseMetadata rejectResponse;
    final long at;
    private final RequestBudget budget;
    /** See {@link #queuedAfterAdmission}: unknown until told, then -1 (not measured) or it. */
    private volatile long queuedNanos = Long.MIN_VALUE;
    private final java.util.concurrent.atomic.AtomicBoolean ended =
        new java.util.concurrent.atomic.AtomicBoolean();

    Admission(Endpoint endpoint, RequestMetadata request, ServerPermit permit,
        ResponseMetadata rejectResponse, long at) {
      this.endpoint = endpoint;
      this.request = request;
      this.permit = permit;
      this.rejectResponse = rejectResponse;
      this.at = at;
      this.budget = rejectResponse == null && request.budgetNanos() != Long.MAX_VALUE
          ? RequestBudget.of(request.budgetNanos()) : null;
      if (rejectResponse != null) {
        ended.set(true);
      }
    }

    public boolean isAdmitted() {
      return rejectResponse == null;
    }

    /**
     * Whether the request came from a Spillway session (it carries {@code Spillway-Session}): its
     * answer must carry the response fields, the credit delta among them, so the filters end its
     * permit before the response's headers are sent.
     */
    public boolean hasSession() {
      return request.sessionId() != 0;
    }

    public Status status() {
      return permit.status();
    }

    public Endpoint endpoint() {
      return endpoint;
    }

    /**
     * The request's handler is about to run: it no longer waits in a queue after admission (see
     * {@link ServerPermit#started}). Idempotent; ignored for a refused request.
     *
     * @param nowNanos now, by the gate's ticker
     */
    public void started(long nowNanos) {
      permit.started(nowNanos);
    }

    /** When the request was decided on, by the gate's clock. */
    public long decidedAtNanos() {
      return at;
    }

    /** The queueing budget to bind around the handler, or {@code null} for none. */
    public RequestBudget budget() {
      return budget;
    }

    /**
     * Tells this admission how long its request queued after it was admitted — for a run slot,
     * for a CPU while it ran, in budgeted locks, semaphores and pools ({@link
     * RequestBudget#chargedNanos}) — ({@code -1}: not measured for this request), before it {@link
     * #end ends}. The endpoint's service time, whose p99 is subtracted from the budget target
     * (protego-nsdi23 §3.2), is the time a request takes less its queueing: counting a request's
     * wait in the server's own queues as service would leave later requests less budget the
     * longer those queues grow, and refuse them for it. Once a filter reports, only requests with
     * a measured wait feed the service time; without any report, the wall time from admission to
     * end does.
     */
    public void queuedAfterAdmission(long nanos) {
      queuedNanos = Math.max(-1, nanos);
    }

    /** Writes a reject's headers: the response fields, {@code Retry-After}, the pushback. */
    public void writeRejectHeaders(BiConsumer<String, String> header) {
      SpillwayHttpHeaders.writeResponse(rejectResponse, header);
      writePushback(header, at);
    }

    /**
     * Writes the headers of an admitted request that aborted on its budget: the response fields of
     * its end ({@code ended}, {@code null} if they were sent already or it had ended before), the
     * budget status, {@code Retry-After} and the pushback.
     */
    public void writeAbortHeaders(ResponseMetadata ended, BiConsumer<String, String> header) {
      if (ended != null) {
        SpillwayHttpHeaders.writeResponse(ended, header);
      }
      header.accept(SpillwayHttpHeaders.STATUS, Integer.toString(Status.REJECTED_BUDGET.code()));
      writePushback(header, ticker.read());
    }

    private void writePushback(BiConsumer<String, String> header, long now) {
      long delay = queueDelay.queueingDelayNanos(now);
      header.accept(SpillwayHttpHeaders.RETRY_AFTER,
          Long.toString(Math.max(1, (delay + NANOS_PER_S - 1) / NANOS_PER_S)));
      header.accept(SpillwayHttpHeaders.RETRY_PUSHBACK_MS,
          Long.toString(Math.max(1, (delay + NANOS_PER_MS - 1) / NANOS_PER_MS)));
    }

    /**
     * Ends an admitted request: {@code failure} {@code null} and a status below 500 is a success,
     * a {@link BudgetExceededException} anywhere in the cause chain an abort, anything else a
     * failure. Returns the response fields (for a response not yet committed), or {@code null} if
     * the request had ended already.
     */
    public ResponseMetadata end(int httpStatus, Throwable failure) {
      BudgetExceededException abort = budgetExceeded(failure);
      Outcome outcome = abort != null ? Outcome.ABORTED
          : failure != null || httpStatus >= 500 ? Outcome.FAILED : Outcome.SUCCESS;
      ResponseMetadata response = end(outcome);
      if (response != null && abort != null && jfr) {
        BudgetAbortEvent e = new BudgetAbortEvent();
        if (e.isEnabled()) {
          e.endpoint = endpoint.name;
          e.queueingDelay = abort.queueingDelayNanos();
          e.remainingBudget = abort.remainingBudgetNanos();
          e.commit();
        }
      }
      return response;
    }

    /** Ends an admitted request with {@code outcome}; {@code null} if it had ended already. */
    public ResponseMetadata end(Outcome outcome) {
      if (!ended.compareAndSet(false, true)) {
        return null;
      }
      inFlight.decrement();
      long now = ticker.read();
      long queued = queuedNanos;
      if (outcome == Outcome.SUCCESS && queued != -1) {
        endpoint.serviceTimes.record(now - at - Math.max(0, queued), now);
      }
      ResponseMetadata response = new ResponseMetadata().sessionId(request.sessionId())
          .requestId(request.requestId());
      permit.complete(outcome, now, response);
      return response;
    }
  }

  /** The {@link BudgetExceededException} in {@code t}'s cause chain, or {@code null}. */
  public static BudgetExceededException budgetExceeded(Throwable t) {
    for (int depth = 0; t != null && depth < 16; depth++, t = t.getCause()) {
      if (t instanceof BudgetExceededException b) {
        return b;
      }
    }
    return null;
  }

  /**
   * A request refused before its gate was asked (no budget, and the properties say refuse). It
   * ends as dropped in its endpoint's stats, as a refusal by the gate does, so the meters count
   * every refusal under {@code completed{outcome=dropped}} as well as under its reason.
   */
  private static final class RefusedPermit extends io.spillway.api.AbstractServerPermit {
    private final GateStats stats;

    RefusedPermit(GateStats stats) {
      super(Status.REJECTED_BUDGET);
      this.stats = stats;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      stats.onCompletion(outcome);
    }
  }
}
