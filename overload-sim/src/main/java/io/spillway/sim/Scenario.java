package io.spillway.sim;

import io.spillway.api.LockWaitRule;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * One experiment, as written in a {@code scenarios/*.conf} file: {@code key = value} lines,
 * {@code #} comments. {@code --set key=value} on the command line overrides any key. Every key is
 * checked: an unknown key or a malformed value is an error naming the key, never silently ignored.
 *
 * <p>The same description is meant to run in the simulator and, later, on real sockets, so keys
 * describe the workload and the server, not the simulator.
 *
 * <p>Immutable and thread-safe.
 */
public final class Scenario {

  /** Every key a scenario may set, with its meaning. Also the help text. */
  static final Map<String, String> KEYS;

  static {
    Map<String, String> keys = new LinkedHashMap<>();
    keys.put("name", "scenario name, used in reports");
    keys.put("description", "one line on what the scenario shows");
    keys.put("clients", "number of client sessions (1 to 100000)");
    keys.put("cores", "server cores executing requests and processing messages");
    keys.put("service", "service-time distribution: exp | const | bimodal (80% mean/4, 20% 4x mean) | lognormal (sigma 1.5, p99 10.6x mean)");
    keys.put("service_mean_us", "mean service time in microseconds");
    keys.put("rtt_us", "network round-trip time in microseconds");
    keys.put("slo_us", "end-to-end latency SLO in microseconds (client queueing included)");
    keys.put("cost_rx_us", "server CPU per message received and parsed (request, demand)");
    keys.put("cost_tx_us", "server CPU per message sent (response, reject, explicit credit)");
    keys.put("cost_reject_us", "server CPU to answer a request it does not run (a refusal, or an abort before its handler runs), beside cost_rx_us; default cost_tx_us");
    keys.put("lost_answers", "share of the answers to aware clients' requests that their clients never read: the caller gave up on the call after it was sent (a cancel, a deadline), so the client gate hears ClientGate.onUnanswered and the call counts as failed; default 0 (simulator only)");
    keys.put("credit_stamps", "whether credit messages reach clients with their stamped window (ResponseMetadata#creditSeq) as every transport sends them; false strips the stamps, leaving deltas alone, and ends a lost answer as a failed answer with no credit (ClientGate#onResponse), the protocol before stamps, to show what lost_answers do to it; default true (simulator only)");
    keys.put("plain_share", "share of requests from clients that do not speak Spillway (docs/design.md): no session, no client queue, credits or tokens, sent at once; a refusal ends the call; default 0 (simulator only)");
    keys.put("block_us", "each handler, after its service time on a core, blocks this long off-core (a downstream call, a database) on its own thread, then needs a core again to send its response; default 0 (simulator only)");
    keys.put("plain_pushback", "whether clients that do not speak Spillway honour the pushback a refusal carries, as the Spring starter's HTTP client side does: a refused client sends nothing more until the server's queueing delay at the refusal (at least 1 ms, in whole ms) has passed, and the requests it issues meanwhile fail in the client; default false (simulator only)");
    keys.put("report_starts", "whether the server tells its gate when a handler gets its request (ServerPermit.started), as the gRPC, native and HTTP hosts do; false: a host that does not, where the gate counts a request until it completes; default true (simulator only)");
    keys.put("demand", "comma-separated demand levels as multiples of capacity, one steady run each");
    keys.put("schedule", "demand steps 'level@ms, ...' (first at 0); replaces 'demand' with one time-series run");
    keys.put("warmup_ms", "steady runs: simulated time before measuring");
    keys.put("duration_ms", "steady runs: simulated time measured; schedules: total length");
    keys.put("window_ms", "time-series window length");
    keys.put("schemes", "comma-separated scheme names");
    keys.put("seed", "random seed; the same seed gives the same results");
    keys.put("capacity_rps", "server capacity; 0 = measure it (no control, closed loop)");
    keys.put("paths", "mutex paths (Protego Fig. 1): probabilities 'p1, p2, ...'; a request holds its path's mutex for its service time; empty: no locks");
    keys.put("path_service_us", "mutex paths: each path's mean service time 'us1, us2, ...' (the service distribution's shape scaled to it); empty: service_mean_us for every path");
    keys.put("path_hold_us", "mutex paths: each path's mean time holding its mutex 'us1, us2, ...', the end of its service (0: the path takes no mutex); empty: the whole service time");
    keys.put("lock_handoff", "mutex paths: fifo (default: the released mutex passes to the oldest waiter, which holds it while waiting for a core; a fair lock, Shenango's) | barging (freed; the woken waiter takes it if still free when it runs; a nonfair ReentrantLock)");
    keys.put("shared_locks", "locks every request takes one after another as its service starts, each released before it takes the next (a search pinning every shard's reader, examples-lucene); ASQM budgets them as it does path mutexes; how many, 0 (default): none (simulator only)");
    keys.put("shared_lock_hold_us", "shared locks: how long a request holds each, on its core, before its service; default 0 (taken and released at once)");
    keys.put("shared_lock_handoff", "shared locks: fifo | barging, as lock_handoff for them; default lock_handoff's value");
    keys.put("maintenance_period_ms", "shared locks: a maintenance thread takes them round robin (lock 0 first), one every this many ms, so each every shared_locks periods: with the plain acquire, never refused, queued in the lock's FIFO behind the requests already waiting, and running its hold on a core (a re-index and refresh); runs never overlap (a late one starts when the previous ends); 0 (default): none");
    keys.put("maintenance_start_ms", "maintenance: when the first hold is due; default one period");
    keys.put("maintenance_hold_us", "maintenance: the mean hold of a lock (on a core)");
    keys.put("maintenance_hold_p99_us", "maintenance: the holds' 99th percentile; set, holds are lognormal with maintenance_hold_us as mean and this p99 (sigma fitted); unset, every hold is the mean");
    keys.put("asqm.wait_estimate", "a mutex's expected wait: queue (default: queue length x"
        + " measured hand-off, at least the oldest waiter's age) | oldest (the paper's)");
    keys.put("asqm.target_us", "Protego's target delay for ASQM budgets (budget = target - p99 service - p99 network); default the SLO");
    keys.put("replicas", "servers, each with the scenario's cores, locks and gate (1 to 16); how calls reach them is replica_routing; with more than one, a fast reject (the server's, or expiry in the client's queue for it) is retried once on another within the client's retry budget");
    keys.put("replica_routing", "replicas: primary (default; protego-nsdi23 §5.3, Fig. 8: every call to server 1 first, a fast reject retried on server 2; at most 2 replicas; demand a multiple of one server's capacity) | round_robin (overload-grpc's SpillwayBalancedChannel: a session per server, each call to the server whose session has the fewest calls queued, from a rotating start, the retry to another chosen the same way; plain clients rotate; demand a multiple of the servers' summed capacity) | shared_session (one session per client for all servers, as one SpillwayClientInterceptor on a round_robin channel: a call leaves the session and goes to the next server in turn; no retry; demand as round_robin)");
    keys.put("replica_speeds", "replicas: each server's speed, 'f1, f2, ...' (one per replica, in (0, 16]): every CPU cost on server k takes its time / fk (f = 0.5: a server of half the capacity); capacity is measured on a server of speed 1; default 1 each");
    keys.put("retry_share", "replicas: the retry budget's share of calls (RetryBudget: each call adds this share of a token, each retry spends one, 10 kept); default 1, every fast reject retried");
    keys.put("sweep", "variants to run one after another: 'key1, key2: a1, a2 | b1, b2 | ...' (one variant per '|')");
    keys.put("threading", "real-socket server: inline (requests queued and run on the event loop) or dispatch (virtual threads on the carrier-delay dispatcher)");
    keys.put("steady_max_s", "real-socket harness: the most one-second slices a capacity reading runs until steady, and a server's warm-up runs past its fixed shape until the JITs are quiet; default 30. The simulator ignores it");
    keys.put("graph.services", "call graph (rajomon-nsdi25 §5.1): services 'name[:workers], ...'; with graph.interfaces and one 'graph.<interface> = svc compute_us -> callee, ...; ...' per interface (optional graph.<interface>.slo_us, graph.<interface>.schedule); see CallGraph");
    keys.put("graph.core1", "call graph, real-socket harness only: services 'a, b, ...' (with every service they call) served by a second process on core 1, beside the load generator; the rest on core 0. Unset: one process. The simulator ignores it");
    keys.put("graph.stall_ms", "call graph: 'start_ms, length_ms': every service stops for length_ms at start_ms (a host hiccup): the simulator's cores, or, in the graph harness's schedule runs, its services processes (SIGSTOP); unset: none");
    keys.put("graph.interfaces", "call graph: interface names 'a, b'; each needs a graph.<interface> key");
    keys.put("time_origin_ns", "value of the controllers' clock at simulated time 0 (tests wrap-around)");
    keys.put("breakwater.alpha", "Breakwater α (eq. 3); default 0.001");
    keys.put("breakwater.beta", "Breakwater β (eq. 2); default 0.02");
    keys.put("breakwater.target_us", "Breakwater d_t; default 40% of the SLO");
    keys.put("breakwater.drop_us", "Breakwater AQM threshold; default 2·d_t");
    keys.put("breakwater.period_us", "Breakwater control period; default one RTT");
    keys.put("breakwater.client_timeout_us", "client queue timeout; default SLO/2");
    keys.put("spillway.budget_us", "the default scheme (`spillway`) with a fixed end-to-end queueing budget every request carries, as breakwater.budget_us; default a budget each client derives from its send-to-response times");
    keys.put("breakwater.budget_us", "beyond the paper: end-to-end queueing budget every request carries (client queue, then server queues); the server aborts a request unrun once it is spent (the Netty transport and the single-server simulator; over gRPC it only bounds budgeted locks); default none (the paper's Breakwater)");
    keys.put("breakwater.per_session_cap", "largest window per session; default 64");
    keys.put("codel.target_us", "CoDel target queueing delay; default 15% of the SLO");
    keys.put("codel.interval_us", "CoDel interval (drop onset and control-law base); default 5% of the SLO");
    keys.put("window.ai", "window additive increase per window of good responses; default 1");
    keys.put("window.md", "window multiplicative decrease factor in (0,1); default 0.5");
    keys.put("window.target_us", "window: responses slower than this (from send) are late; default the SLO");
    keys.put("window.max", "largest window per client; default 64");
    keys.put("window.client_timeout_us", "window client queue timeout; default SLO/2");
    keys.put("seda.adj_i", "SEDA additive increase (req/s per client); default 40 x 1000 / clients");
    keys.put("seda.adj_d", "SEDA multiplicative decrease divisor; default 1.04");
    keys.put("seda.target_us", "SEDA target 99th-percentile response time; default 40% of the SLO");
    keys.put("seda.timeout_us", "SEDA longest time between controller runs; default 1000");
    keys.put("seda.init_rps", "SEDA initial per-client rate (drawn from [x/2, x]); default 1000");
    keys.put("seda.burst", "SEDA token bucket depth; default 4");
    keys.put("seda.client_timeout_us", "SEDA client queue timeout; default SLO/2");
    keys.put("dagor.q_us", "DAGOR_q, average queueing time that means overload; default 35% of the SLO");
    keys.put("dagor.alpha", "DAGOR α, share of admitted requests shed per overloaded window; default 0.05");
    keys.put("dagor.beta", "DAGOR β, share of admitted requests added per calm window; default 0.01");
    keys.put("dagor.period_us", "DAGOR longest window; default 1000");
    keys.put("dagor.window_reqs", "DAGOR most requests per window; default 2000");
    keys.put("netflix.initial_limit", "Netflix limiters: limit before any sample; default 20");
    keys.put("netflix.min_limit", "Netflix Gradient2/AIMD: lowest limit; default 20");
    keys.put("netflix.max_limit", "Netflix limiters: highest limit; default 200 (Vegas 1000)");
    keys.put("netflix.gradient2.queue_size", "Gradient2 headroom added to the gradient-scaled limit; default 4");
    keys.put("netflix.gradient2.smoothing", "Gradient2 weight of a new limit estimate in (0,1]; default 0.2");
    keys.put("netflix.gradient2.rtt_tolerance", "Gradient2 tolerated ratio of latest to long-term latency; default 1.5");
    keys.put("netflix.vegas.smoothing", "Vegas weight of a new limit estimate in (0,1]; default 1.0");
    keys.put("netflix.aimd.backoff", "AIMD multiplicative decrease on a drop or late sample, in [0.5,1); default 0.9");
    keys.put("netflix.aimd.timeout_us", "AIMD: a server latency above this counts as a drop; default 5000000 (5 s)");
    keys.put("sentinel.load", "Sentinel (real-socket harness only): the system rule's load1 trigger; default 2.5 x the server's cores (Sentinel's reference value), -1 off");
    keys.put("sentinel.cpu_usage", "Sentinel (real-socket harness only): the system rule's CPU-usage trigger in [0,1]; default -1 (off)");
    keys.put("protego.client_timeout_us", "Protego's client queue timeout; default SLO/2");
    keys.put("protego.rule", "Protego's pool rule: authors (bw2_server.c, default) | paper (Algorithm 1 as printed)");
    keys.put("rajomon.threshold_us", "Rajomon queueing-delay threshold; default 25% of the SLO");
    keys.put("rajomon.interval_us", "Rajomon price update interval; default max(RTT, threshold/2)");
    keys.put("rajomon.increase", "Rajomon price change in tokens per threshold of delay excess (both directions); default 160");
    keys.put("rajomon.refill_tokens", "Rajomon tokens refilled per interval per client (Poisson); default 10");
    keys.put("rajomon.wait_us", "Rajomon client wait for tokens; default 0 (fail fast)");
    keys.put("rajomon.trend", "Rajomon: above the threshold the price also moves by this many times the gain per unit of change in the queueing delay (PIE's trend term); default 10, 0 holds the price while the queue drains");
    keys.put("rajomon.all_prices", "Rajomon: a response that carries a price also carries the prices of the server's other interfaces (true or false); default true");
    keys.put("rajomon.list_lowers_after", "Rajomon: a listed price (another interface's response) lowers a client's known price only once it is this many price intervals old; default 100, 0 at once");
    keys.put("rajomon.attach_every", "Rajomon: every n-th response carries the price; default 1 (every response)");
    keys.put("matrix.service", "robustness matrix (./spillway sim robustness, see RobustnessMatrix): the service-distribution axis 'exp, const, ...'; the scenario's own keys are the centre");
    keys.put("matrix.service_mean_us", "robustness matrix: the mean-service-time axis (us)");
    keys.put("matrix.clients", "robustness matrix: the client-count axis");
    keys.put("matrix.rtt_us", "robustness matrix: the RTT axis (us)");
    keys.put("matrix.grid_clients", "robustness matrix: client counts crossed with every matrix.service distribution (a grid beside the axes)");
    keys.put("matrix.seeds", "robustness matrix: further seeds the centre workload runs with");
    keys.put("matrix.sample", "robustness matrix: workloads drawn at random from the full factorial of the axes; default 0");
    keys.put("matrix.sample_seed", "robustness matrix: the seed of that draw; default 1");
    keys.put("matrix.steady", "robustness matrix: steady demand levels (multiples of capacity)");
    keys.put("matrix.step", "robustness matrix: demand levels of the step pattern, one phase each 'a, b, c'; empty: none");
    keys.put("matrix.step_windows", "robustness matrix: windows per step phase; default 12");
    keys.put("matrix.ramp", "robustness matrix: the ramp 'from, to, steps' (two windows a step, then four at the top); empty: none");
    keys.put("matrix.oscillation", "robustness matrix: 'low, high, windows' alternating every that many windows, four periods; empty: none");
    keys.put("matrix.workloads", "robustness matrix: run only these workloads, by label ('exp 10us c10000 rtt10 s1; const 10us c100 rtt10 s1', separated by ';'); empty: all. A cell's results do not change with the subset");
    keys.put("matrix.patterns", "robustness matrix: run only these demand patterns, by name ('steady 1.2x; ramp 0.5-3x', separated by ';'); empty: all. A cell's results do not change with the subset");
    keys.put("matrix.warmup_windows", "robustness matrix: steady runs' windows before measuring; default 8");
    keys.put("matrix.measure_windows", "robustness matrix: steady runs' windows measured; default 10");
    keys.put("matrix.window_completions", "robustness matrix: a window lasts 20 ms or the time for this many completions at capacity, whichever is longer; default 5000");
    KEYS = Collections.unmodifiableMap(keys);
  }

  /** Keys under this prefix describe a call graph; {@link CallGraph} validates them. */
  static final String GRAPH_PREFIX = "graph.";
  /** Keys under this prefix describe a µTune mid-tier; {@link MuTuneExperiment} validates them. */
  static final String MUTUNE_PREFIX = "mutune.";

  private static final Map<String, String> DEFAULTS = Map.ofEntries(
      Map.entry("description", ""),
      Map.entry("clients", "1000"),
      Map.entry("cores", "10"),
      Map.entry("service", "exp"),
      Map.entry("service_mean_us", "10"),
      Map.entry("rtt_us", "10"),
      Map.entry("slo_us", "200"),
      Map.entry("cost_rx_us", "1.0"),
      Map.entry("cost_tx_us", "0.75"),
      Map.entry("demand", "0.5, 1.0, 1.5, 2.0"),
      Map.entry("schedule", ""),
      Map.entry("warmup_ms", "500"),
      Map.entry("duration_ms", "1500"),
      Map.entry("window_ms", "20"),
      Map.entry("schemes", "none, breakwater"),
      Map.entry("seed", "1"),
      Map.entry("capacity_rps", "0"),
      Map.entry("time_origin_ns", "0"),
      Map.entry("threading", "dispatch"),
      Map.entry("steady_max_s", "30"),
      Map.entry("sweep", ""),
      Map.entry("replicas", "1"),
      Map.entry("retry_share", "1"),
      Map.entry("replica_routing", "primary"),
      Map.entry("replica_speeds", ""),
      Map.entry("paths", ""),
      Map.entry("path_service_us", ""),
      Map.entry("path_hold_us", ""),
      Map.entry("lock_handoff", "fifo"),
      Map.entry("shared_locks", "0"),
      Map.entry("shared_lock_hold_us", "0"),
      Map.entry("maintenance_period_ms", "0"),
      Map.entry("plain_share", "0"),
      Map.entry("lost_answers", "0"),
      Map.entry("credit_stamps", "true"),
      Map.entry("plain_pushback", "false"),
      Map.entry("block_us", "0"),
      Map.entry("report_starts", "true"));

  private final Map<String, String> values;

  private Scenario(Map<String, String> values) {
    this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
    validate();
  }

  /** Reads a scenario file. */
  public static Scenario load(Path file, Map<String, String> overrides) throws IOException {
    Map<String, String> values = parse(Files.readAllLines(file), file.toString());
    values.putIfAbsent("name", stripExtension(file.getFileName().toString()));
    values.putAll(checkKeys(overrides, "--set"));
    return new Scenario(values);
  }

  /** A scenario from literal keys (tests). */
  public static Scenario of(Map<String, String> values) {
    Map<String, String> copy = new LinkedHashMap<>(checkKeys(values, "scenario"));
    copy.putIfAbsent("name", "inline");
    return new Scenario(copy);
  }

  /** This scenario with some keys replaced. */
  public Scenario with(Map<String, String> overrides) {
    Map<String, String> copy = new LinkedHashMap<>(values);
    copy.putAll(checkKeys(overrides, "override"));
    return new Scenario(copy);
  }

  static Map<String, String> parse(List<String> lines, String source) {
    Map<String, String> values = new LinkedHashMap<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int eq = line.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(source + ":" + (i + 1) + ": expected 'key = value', got '" + line + "'");
      }
      values.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
    }
    return checkKeys(values, source);
  }

  private static Map<String, String> checkKeys(Map<String, String> values, String source) {
    for (String key : values.keySet()) {
      if (!KEYS.containsKey(key) && !key.startsWith(GRAPH_PREFIX) && !key.startsWith(MUTUNE_PREFIX)) {
        throw new IllegalArgumentException(source + ": unknown scenario key '" + key
            + "'; known keys: " + String.join(", ", KEYS.keySet()));
      }
    }
    return new LinkedHashMap<>(values);
  }

  private void validate() {
    positive("clients", clients());
    positive("cores", cores());
    positive("steady_max_s", steadyMaxSlices());
    positiveDouble("service_mean_us", doubleValue("service_mean_us"));
    positiveDouble("rtt_us", doubleValue("rtt_us"));
    positiveDouble("slo_us", doubleValue("slo_us"));
    // positive, yet rounded to 0 ns the run would refuse it later without naming the key
    atLeastOneNano("service_mean_us", 1_000);
    atLeastOneNano("rtt_us", 1_000);
    atLeastOneNano("slo_us", 1_000);
    nonNegative("cost_rx_us", doubleValue("cost_rx_us"));
    nonNegative("cost_tx_us", doubleValue("cost_tx_us"));
    if (isSet("cost_reject_us")) {
      nonNegative("cost_reject_us", doubleValue("cost_reject_us"));
    }
    double plain = plainShare();
    if (!(plain >= 0 && plain <= 1)) {
      throw invalid("plain_share", "in [0, 1], got " + plain);
    }
    nonNegative("block_us", doubleValue("block_us"));
    double lost = lostAnswers();
    if (!(lost >= 0 && lost < 1)) {
      throw invalid("lost_answers", "in [0, 1), got " + lost);
    }
    creditStamps();
    plainPushback();
    reportStarts();
    rxCostNanos(); // each within MAX_NANOS
    txCostNanos();
    rejectCostNanos();
    blockNanos();
    warmupNanos();
    nonNegative("warmup_ms", doubleValue("warmup_ms"));
    positiveDouble("duration_ms", doubleValue("duration_ms"));
    positiveDouble("window_ms", doubleValue("window_ms"));
    atLeastOneNano("duration_ms", 1_000_000);
    atLeastOneNano("window_ms", 1_000_000);
    nonNegative("capacity_rps", doubleValue("capacity_rps"));
    if (clients() > 100_000) {
      throw invalid("clients", "at most 100000");
    }
    service();
    threading();
    sweep();
    paths();
    pathHoldShares();
    lockBarging();
    if (blockNanos() > 0 && paths().length > 0) {
      throw invalid("block_us", "cannot be combined with mutex paths ('paths')");
    }
    sharedLocks();
    sharedLockHoldNanos();
    sharedLockBarging();
    maintenance();
    if (blockNanos() > 0 && sharedLocks() > 0) {
      throw invalid("block_us", "cannot be combined with shared locks ('shared_locks')");
    }
    if (replicas() < 1 || replicas() > 16) {
      throw invalid("replicas", "between 1 and 16, got " + replicas());
    }
    if (!roundRobin() && replicas() > 2) {
      throw invalid("replicas", "1 or 2 with replica_routing = primary, got " + replicas());
    }
    replicaSpeeds();
    double share = retryShare();
    if (!(share > 0 && share <= 1)) {
      throw invalid("retry_share", "in (0, 1]");
    }
    callGraph();
    seed();
    timeOriginNanos();
    if (schemes().isEmpty()) {
      throw invalid("schemes", "name at least one scheme");
    }
    if (schedule().isEmpty()) {
      List<Double> demand = demandLevels();
      if (demand.isEmpty()) {
        throw invalid("demand", "give at least one level");
      }
      demand.forEach(d -> positiveDouble("demand", d));
    }
  }

  public String name() {
    return get("name");
  }

  /** The {@code mutune.*} keys without their prefix (a µTune mid-tier scenario), or an empty map. */
  public Map<String, String> muTuneKeys() {
    Map<String, String> m = new LinkedHashMap<>();
    values.forEach((k, v) -> {
      if (k.startsWith(MUTUNE_PREFIX)) {
        m.put(k.substring(MUTUNE_PREFIX.length()), v);
      }
    });
    return m;
  }

  public String description() {
    return get("description");
  }

  public int clients() {
    return intValue("clients");
  }

  public int cores() {
    return intValue("cores");
  }

  public ServiceTime service() {
    return ServiceTime.parse(get("service"), nanos("service_mean_us", 1_000));
  }

  /** The real-socket server's threading model (µTune's inline vs dispatch); the simulator ignores it. */
  public String threading() {
    String t = get("threading").strip();
    if (!t.equals("inline") && !t.equals("dispatch")) {
      throw invalid("threading", "expected inline or dispatch, got '" + t + "'");
    }
    return t;
  }

  /**
   * The real-socket harness's bound on one-second slices run until steady: a capacity reading's,
   * and a server's warm-up past its fixed shape. Past it the harness goes on, saying the reading or
   * the warm-up did not settle, rather than waiting for a machine that never quiets.
   */
  public int steadyMaxSlices() {
    return intValue("steady_max_s");
  }

  public long rttNanos() {
    return nanos("rtt_us", 1_000);
  }

  public long sloNanos() {
    return nanos("slo_us", 1_000);
  }

  public long rxCostNanos() {
    return nanos("cost_rx_us", 1_000);
  }

  public long txCostNanos() {
    return nanos("cost_tx_us", 1_000);
  }

  /** Server CPU to answer a request it does not run; {@code cost_tx_us} unless set. */
  public long rejectCostNanos() {
    return isSet("cost_reject_us") ? nanos("cost_reject_us", 1_000) : txCostNanos();
  }

  /** The share of requests from clients that do not speak Spillway. */
  public double plainShare() {
    return doubleValue("plain_share");
  }

  /** The share of aware clients' answers never read ({@code lost_answers}). */
  public double lostAnswers() {
    return doubleValue("lost_answers");
  }

  /** Whether credit messages keep their stamped windows ({@code credit_stamps}). */
  public boolean creditStamps() {
    return booleanValue("credit_stamps");
  }

  /** Whether clients that do not speak Spillway honour a refusal's pushback. */
  public boolean plainPushback() {
    return booleanValue("plain_pushback");
  }

  /** How long each handler blocks off-core after its service time. */
  public long blockNanos() {
    return nanos("block_us", 1_000);
  }

  /** Whether the server reports handler starts to its gate ({@code ServerPermit.started}). */
  public boolean reportStarts() {
    return booleanValue("report_starts");
  }

  /**
   * The keys set here that only the simulator models (clients that do not speak Spillway, handlers
   * that block, hosts that do not report starts, a separate refusal cost, shared locks and their
   * maintenance), each with a value other than its default; empty when the scenario runs on the
   * real-socket harness as written.
   */
  public List<String> simulatorOnlyKeys() {
    List<String> keys = new ArrayList<>();
    if (plainShare() > 0) {
      keys.add("plain_share");
    }
    if (plainPushback()) {
      keys.add("plain_pushback");
    }
    if (lostAnswers() > 0) {
      keys.add("lost_answers");
    }
    if (!creditStamps()) {
      keys.add("credit_stamps");
    }
    if (blockNanos() > 0) {
      keys.add("block_us");
    }
    if (!reportStarts()) {
      keys.add("report_starts");
    }
    if (rejectCostNanos() != txCostNanos()) {
      keys.add("cost_reject_us");
    }
    if (sharedLocks() > 0) {
      keys.add("shared_locks");
    }
    return keys;
  }

  public long warmupNanos() {
    return nanos("warmup_ms", 1_000_000);
  }

  public long durationNanos() {
    return nanos("duration_ms", 1_000_000);
  }

  public long windowNanos() {
    return nanos("window_ms", 1_000_000);
  }

  public long seed() {
    return longValue("seed");
  }

  public long timeOriginNanos() {
    return longValue("time_origin_ns");
  }

  /** Servers behind the clients (protego-nsdi23 §5.3's two replicas); 1 by default. */
  public int replicas() {
    return intValue("replicas");
  }

  /**
   * Whether calls are spread over the replicas as overload-grpc's balanced channel spreads them
   * ({@code replica_routing = round_robin}) rather than sent to server 1 first ({@code primary}).
   */
  public boolean roundRobin() {
    return switch (get("replica_routing").strip()) {
      case "primary" -> false;
      case "round_robin", "shared_session" -> true;
      default -> throw invalid("replica_routing", "expected primary, round_robin or "
          + "shared_session, got '" + get("replica_routing") + "'");
    };
  }

  /**
   * Whether each client keeps one session for all the replicas, its calls sent to them in turn
   * after they leave that session ({@code replica_routing = shared_session}): what a single
   * session on a channel that balances with gRPC's {@code round_robin} does, the case
   * overload-grpc's per-backend sessions exist to avoid. No retries.
   */
  public boolean sharedSession() {
    return roundRobin() && get("replica_routing").strip().equals("shared_session");
  }

  /** Each replica's speed ({@code replica_speeds}): its CPU costs take their time over it; 1 each by default. */
  public double[] replicaSpeeds() {
    List<String> items = list("replica_speeds");
    double[] speeds = new double[replicas()];
    if (items.isEmpty()) {
      Arrays.fill(speeds, 1);
      return speeds;
    }
    if (items.size() != speeds.length) {
      throw invalid("replica_speeds", "one per replica (" + speeds.length + "), got " + items.size());
    }
    for (int i = 0; i < speeds.length; i++) {
      speeds[i] = parseDouble("replica_speeds", items.get(i));
      if (!(speeds[i] > 0 && speeds[i] <= 16)) {
        throw invalid("replica_speeds", "each in (0, 16], got " + items.get(i));
      }
    }
    return speeds;
  }

  /**
   * What demand 1.0 is, over one server's capacity: with round-robin routing the servers' summed
   * speeds (every server serves its share), with primary routing 1 (Protego's Fig. 8 counts
   * demand in one server's capacity, the second server taking only retries).
   */
  public double capacityScale() {
    if (!roundRobin()) {
      return 1;
    }
    double sum = 0;
    for (double f : replicaSpeeds()) {
      sum += f;
    }
    return sum;
  }

  /** With replicas: the share of calls the clients' retry budgets let retry. */
  public double retryShare() {
    return doubleValue("retry_share");
  }

  /** A measured or given capacity; 0 means "measure it". */
  public double capacityRps() {
    return doubleValue("capacity_rps");
  }

  public List<String> schemes() {
    return list("schemes");
  }

  public List<Double> demandLevels() {
    List<Double> levels = new ArrayList<>();
    for (String s : list("demand")) {
      levels.add(parseDouble("demand", s));
    }
    return levels;
  }

  /** The demand steps, empty if this scenario has steady demand levels instead. */
  public List<DemandStep> schedule() {
    String text = get("schedule");
    List<DemandStep> steps = text == null ? List.of() : parseSchedule("schedule", text);
    if (!steps.isEmpty() && durationNanos() <= steps.getLast().startNanos()) {
      throw invalid("duration_ms", "must extend past the last schedule step");
    }
    return steps;
  }

  /** Parses demand steps 'level@ms, ...' (the first at 0, times increasing). */
  static List<DemandStep> parseSchedule(String key, String text) {
    List<DemandStep> steps = new ArrayList<>();
    for (String raw : text.split(",")) {
      String item = raw.strip();
      if (item.isEmpty()) {
        continue;
      }
      int at = item.indexOf('@');
      if (at <= 0) {
        throw invalid(key, "expected 'level@ms', got '" + item + "'");
      }
      double level = parseDouble(key, item.substring(0, at).strip());
      String time = item.substring(at + 1).strip();
      if (time.endsWith("ms")) {
        time = time.substring(0, time.length() - 2).strip();
      }
      long startNanos = Math.round(parseDouble(key, time) * 1_000_000);
      if (level < 0 || startNanos < 0) {
        throw invalid(key, "levels and times must be non-negative: '" + item + "'");
      }
      if (steps.isEmpty() && startNanos != 0) {
        throw invalid(key, "the first step must start at 0");
      }
      if (!steps.isEmpty() && startNanos <= steps.getLast().startNanos()) {
        throw invalid(key, "steps must be in increasing time order");
      }
      steps.add(new DemandStep(level, startNanos));
    }
    return steps;
  }

  /**
   * The call graph this scenario describes with its {@code graph.*} keys (rajomon-nsdi25 §5.1),
   * or {@code null} when it describes a single server.
   */
  public CallGraph callGraph() {
    return CallGraph.present(this) ? CallGraph.parse(this) : null;
  }

  /** A {@code graph.*} key's raw value, {@code null} if unset. */
  String rawGraphValue(String key) {
    return values.get(key);
  }

  /** Every {@code graph.*} key set. */
  List<String> graphKeys() {
    return values.keySet().stream().filter(k -> k.startsWith(GRAPH_PREFIX)).toList();
  }

  /** The probability of each mutex path (Protego Fig. 1), empty when requests take no locks. */
  public double[] paths() {
    List<String> items = list("paths");
    double[] p = new double[items.size()];
    double sum = 0;
    for (int i = 0; i < p.length; i++) {
      p[i] = parseDouble("paths", items.get(i));
      if (!(p[i] >= 0)) {
        throw invalid("paths", "probabilities must not be negative");
      }
      sum += p[i];
    }
    if (p.length > 0 && Math.abs(sum - 1) > 1e-9) {
      throw invalid("paths", "probabilities must sum to 1, got " + sum);
    }
    return p;
  }

  /** Whether a released mutex is freed for anyone to take ({@code lock_handoff = barging}). */
  boolean lockBarging() {
    return switch (get("lock_handoff").strip()) {
      case "fifo" -> false;
      case "barging" -> true;
      default -> throw invalid("lock_handoff", "expected fifo or barging, got '" + get("lock_handoff") + "'");
    };
  }

  /** How many shared locks every request takes in turn as its service starts ({@code shared_locks}). */
  int sharedLocks() {
    int n = intValue("shared_locks");
    if (n < 0 || n > 1024) {
      throw invalid("shared_locks", "between 0 and 1024, got " + n);
    }
    return n;
  }

  /** How long a request holds each shared lock, on its core ({@code shared_lock_hold_us}). */
  long sharedLockHoldNanos() {
    nonNegative("shared_lock_hold_us", doubleValue("shared_lock_hold_us"));
    return nanos("shared_lock_hold_us", 1_000);
  }

  /** Whether a released shared lock is freed for anyone to take; {@code lock_handoff}'s unless set. */
  boolean sharedLockBarging() {
    if (!isSet("shared_lock_handoff")) {
      return lockBarging();
    }
    return switch (get("shared_lock_handoff").strip()) {
      case "fifo" -> false;
      case "barging" -> true;
      default -> throw invalid("shared_lock_handoff", "expected fifo or barging, got '"
          + get("shared_lock_handoff") + "'");
    };
  }

  /**
   * The maintenance thread that holds the shared locks in turn ({@code maintenance_*} keys), or
   * {@code null} when there is none ({@code maintenance_period_ms = 0}).
   */
  Maintenance maintenance() {
    double periodMs = doubleValue("maintenance_period_ms");
    if (periodMs == 0) {
      for (String key : List.of("maintenance_start_ms", "maintenance_hold_us", "maintenance_hold_p99_us")) {
        if (isSet(key)) {
          throw invalid(key, "needs maintenance_period_ms (no maintenance thread without a period)");
        }
      }
      return null;
    }
    positiveDouble("maintenance_period_ms", periodMs);
    long period = nanos("maintenance_period_ms", 1_000_000);
    if (period < 1) {
      throw invalid("maintenance_period_ms", "at least one nanosecond, got " + periodMs);
    }
    if (sharedLocks() == 0) {
      throw invalid("maintenance_period_ms", "needs shared locks to hold (shared_locks)");
    }
    if (!isSet("maintenance_hold_us")) {
      throw invalid("maintenance_hold_us", "needed with maintenance_period_ms");
    }
    double holdUs = doubleValue("maintenance_hold_us");
    positiveDouble("maintenance_hold_us", holdUs);
    long hold = Math.max(1, nanos("maintenance_hold_us", 1_000));
    long start = period;
    if (isSet("maintenance_start_ms")) {
      nonNegative("maintenance_start_ms", doubleValue("maintenance_start_ms"));
      start = nanos("maintenance_start_ms", 1_000_000);
    }
    double sigma = 0;
    if (isSet("maintenance_hold_p99_us")) {
      double p99 = doubleValue("maintenance_hold_p99_us");
      try {
        sigma = Maintenance.lognormalSigma(holdUs, p99);
      } catch (IllegalArgumentException e) {
        throw invalid("maintenance_hold_p99_us", e.getMessage());
      }
    }
    return new Maintenance(sharedLocks(), period, start, hold, sigma);
  }

  /** Each path's mean service time over {@code service_mean_us} (all 1 unless {@code path_service_us}). */
  double[] pathServiceScales() {
    double[] paths = paths();
    double[] scale = new double[paths.length];
    java.util.Arrays.fill(scale, 1);
    List<String> items = list("path_service_us");
    if (items.isEmpty()) {
      return scale;
    }
    if (items.size() != paths.length) {
      throw invalid("path_service_us", "needs one value per path (" + paths.length + ")");
    }
    double mean = doubleValue("service_mean_us");
    for (int i = 0; i < scale.length; i++) {
      double us = parseDouble("path_service_us", items.get(i));
      if (!(us > 0)) {
        throw invalid("path_service_us", "service times must be positive");
      }
      scale[i] = us / mean;
    }
    return scale;
  }

  /** The share of each path's service time spent holding its mutex (all 1 unless {@code path_hold_us}). */
  double[] pathHoldShares() {
    double[] scale = pathServiceScales();
    double[] share = new double[scale.length];
    java.util.Arrays.fill(share, 1);
    List<String> items = list("path_hold_us");
    if (items.isEmpty()) {
      return share;
    }
    if (items.size() != share.length) {
      throw invalid("path_hold_us", "needs one value per path (" + share.length + ")");
    }
    double mean = doubleValue("service_mean_us");
    for (int i = 0; i < share.length; i++) {
      double us = parseDouble("path_hold_us", items.get(i));
      double pathMean = mean * scale[i];
      if (!(us >= 0) || us > pathMean + 1e-9) {
        throw invalid("path_hold_us", "a hold must be between 0 and its path's mean service time ("
            + pathMean + " us)");
      }
      share[i] = Math.min(1, us / pathMean);
    }
    return share;
  }

  /**
   * ASQM's queueing budget (protego-nsdi23 §3.2): target delay − p99 service time − p99 network
   * delay (one RTT here: the network has no jitter), at least zero.
   */
  public long asqmBudgetNanos() {
    long target = isSet("asqm.target_us") ? nanos("asqm.target_us", 1_000) : sloNanos();
    return Math.max(0, target - service().p99Nanos() - rttNanos());
  }

  /**
   * How ASQM estimates a mutex's wait (key {@code asqm.wait_estimate}): {@code queue} (default,
   * {@link LockWaitRule#QUEUE_AWARE}) or {@code oldest} (the paper's, {@link
   * LockWaitRule#OLDEST_WAITER}).
   */
  public LockWaitRule lockWaitRule() {
    String v = get("asqm.wait_estimate");
    if (v == null || v.isBlank() || v.strip().equals("queue")) {
      return LockWaitRule.QUEUE_AWARE;
    }
    if (v.strip().equals("oldest")) {
      return LockWaitRule.OLDEST_WAITER;
    }
    throw invalid("asqm.wait_estimate", "expected queue or oldest, got '" + v + "'");
  }

  /**
   * The variants of a {@code sweep}, each a map of keys to values to apply with {@link #with}; empty
   * if the scenario has no sweep.
   */
  public List<Map<String, String>> sweep() {
    String v = get("sweep");
    if (v == null || v.isBlank()) {
      return List.of();
    }
    int colon = v.indexOf(':');
    if (colon <= 0) {
      throw invalid("sweep", "expected 'key1, key2: a1, a2 | b1, b2', got '" + v + "'");
    }
    List<String> keys = Arrays.stream(v.substring(0, colon).split(",")).map(String::strip).toList();
    for (String key : keys) {
      if (!KEYS.containsKey(key) || key.equals("sweep") || key.equals("name")) {
        throw invalid("sweep", "cannot vary '" + key + "'");
      }
    }
    List<Map<String, String>> variants = new ArrayList<>();
    for (String tuple : v.substring(colon + 1).split("\\|")) {
      List<String> values = Arrays.stream(tuple.split(",")).map(String::strip).toList();
      if (values.size() != keys.size() || values.stream().anyMatch(String::isEmpty)) {
        throw invalid("sweep", "variant '" + tuple.strip() + "' needs " + keys.size() + " values for " + keys);
      }
      Map<String, String> variant = new LinkedHashMap<>();
      for (int i = 0; i < keys.size(); i++) {
        variant.put(keys.get(i), values.get(i));
      }
      variants.add(variant);
    }
    return variants;
  }

  /** Whether {@code key} was set explicitly (file or --set) rather than left to its default. */
  public boolean isSet(String key) {
    return values.containsKey(key);
  }

  /** A key's value as text, the default if unset; {@code null} for unset keys with no default. */
  public String get(String key) {
    if (!KEYS.containsKey(key)) {
      throw new IllegalArgumentException("unknown scenario key '" + key + "'");
    }
    String v = values.get(key);
    return v != null ? v : DEFAULTS.get(key);
  }

  /**
   * The longest time a key may give, 2^60 ns (36 years): far beyond any run, and small enough that
   * virtual time plus a few such spans cannot overflow a {@code long} and run the clock backwards.
   */
  static final long MAX_NANOS = 1L << 60;

  /** A key's value in nanoseconds, given the unit's size in nanoseconds; at most ±{@link #MAX_NANOS}. */
  public long nanos(String key, long unitNanos) {
    double v = doubleValue(key) * unitNanos;
    if (Math.abs(v) > MAX_NANOS) {
      throw invalid(key, "at most " + MAX_NANOS / unitNanos + " in its unit, got '" + get(key) + "'");
    }
    return Math.round(v);
  }

  public double doubleValue(String key) {
    return parseDouble(key, get(key));
  }

  int intValue(String key) {
    try {
      return Integer.parseInt(get(key));
    } catch (NumberFormatException e) {
      throw invalid(key, "expected a whole number, got '" + get(key) + "'");
    }
  }

  /** {@code true} or {@code false}, nothing else. */
  boolean booleanValue(String key) {
    return switch (get(key)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw invalid(key, "expected true or false, got '" + get(key) + "'");
    };
  }

  long longValue(String key) {
    try {
      return Long.parseLong(get(key));
    } catch (NumberFormatException e) {
      throw invalid(key, "expected a whole number, got '" + get(key) + "'");
    }
  }

  private List<String> list(String key) {
    String v = get(key);
    if (v == null || v.isBlank()) {
      return List.of();
    }
    return Arrays.stream(v.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
  }

  /** The effective values of every key, defaults included, sorted by key. */
  public Map<String, String> effective() {
    Map<String, String> all = new LinkedHashMap<>();
    Set<String> keys = new TreeSet<>(KEYS.keySet());
    keys.addAll(graphKeys());
    for (String key : keys) {
      String v = key.startsWith(GRAPH_PREFIX) ? values.get(key) : get(key);
      if (v != null) {
        all.put(key, v);
      }
    }
    return all;
  }

  private static double parseDouble(String key, String text) {
    try {
      double v = Double.parseDouble(text.strip());
      if (!Double.isFinite(v)) {
        throw invalid(key, "expected a finite number, got '" + text + "'");
      }
      return v;
    } catch (NumberFormatException | NullPointerException e) {
      throw invalid(key, "expected a number, got '" + text + "'");
    }
  }

  private static void positive(String key, long v) {
    if (v <= 0) {
      throw invalid(key, "must be positive, got " + v);
    }
  }

  private static void positiveDouble(String key, double v) {
    if (!(v > 0)) {
      throw invalid(key, "must be positive, got " + v);
    }
  }

  private void atLeastOneNano(String key, long unitNanos) {
    if (nanos(key, unitNanos) < 1) {
      throw invalid(key, "must be at least 1 ns, got '" + get(key) + "'");
    }
  }

  private static void nonNegative(String key, double v) {
    if (!(v >= 0)) {
      throw invalid(key, "must not be negative, got " + v);
    }
  }

  static IllegalArgumentException invalid(String key, String why) {
    return new IllegalArgumentException("scenario key '" + key + "': " + why);
  }

  private static String stripExtension(String fileName) {
    int dot = fileName.lastIndexOf('.');
    return dot > 0 ? fileName.substring(0, dot) : fileName;
  }

  /** One step of a demand schedule: {@code level} × capacity from {@code startNanos} on. */
  public record DemandStep(double level, long startNanos) { }
}
