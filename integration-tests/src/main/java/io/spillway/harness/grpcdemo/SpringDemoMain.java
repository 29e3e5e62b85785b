package io.spillway.harness.grpcdemo;

import io.spillway.harness.SteadyCapacity;
import io.spillway.report.ReportWriter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.Reader;
import java.io.Writer;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.Histogram;

/**
 * {@code ./spillway spring-demo [--out DIR] [--seconds S] [--configs C,...] [--levels L,...]
 * [--slo-us N] [--app-arg ARG ...] [--app-jvm-arg OPTION ...] [--http METHOD:PATH]
 * [--cpu-quota CORES] [--container tomcat|jetty]}: examples-spring's
 * inventory service, a real Spring Boot process pinned to core 0, flooded from core 1 at 1×, 2× and
 * 3× of its capacity in each configuration (docs/results/spring.md). With {@code --cpu-quota} every
 * application starts in a control group with that CPU limit per 100 ms ({@link CpuQuotaGroup}; needs
 * root), and each gRPC level prints how often the group was throttled.
 *
 * <p>Configurations, each a fresh application process:
 * <ul>
 *   <li>over HTTP ({@code POST /reservations}), driven by {@code h2load}: {@code none} (the starter
 *       with {@code spillway.enabled=false}), {@code resilience4j}, {@code concurrency-limits}
 *       (Spillway off, the peer's filter) and {@code spillway} (the starter's defaults; h2load
 *       sends no Spillway header: plain clients); and the same Spillway application driven by
 *       {@link HttpDemoLoad} (open-loop Poisson over HTTP/2, 4 connections) instead of h2load's
 *       rate mode: {@code spillway-poisson} (plain clients), {@code spillway-client-side}
 *       (requests held off in the client for the pushback a {@code 503} asked for) and {@code
 *       spillway-credits} (the starter's client side as a Spring client gets it by default: that
 *       pushback and a credit session with the server);
 *   <li>over HTTP/1.1, driven by {@link HttpDemoLoad} over {@link #HTTP1_CONNECTIONS} keep-alive
 *       connections with plain clients: {@code none-http1} and {@code spillway-http1}, and, when
 *       named, {@code resilience4j-http1} and {@code concurrency-limits-http1} (the application
 *       of the name without {@code -http1}; capacity is {@code none-http1}'s closed loop over
 *       HTTP/1.1, {@link Run#runHttp1});
 *   <li>over gRPC ({@code Inventory/Reserve}), driven by {@link DemoLoad} (open-loop Poisson, 8
 *       channels): {@code grpc-none}, {@code grpc-spillway-plain} (no Spillway metadata),
 *       {@code grpc-spillway-credits} (one {@code SpillwayClientInterceptor} session per channel)
 *       and {@code grpc-spillway-spring-client} (the channels of a Spring Boot client application
 *       with the starter, {@link SpringClientChannels}: Spring gRPC builds them and the starter's
 *       channel customizer gives each its per-backend sessions);
 *   <li>the same two plain-client gRPC configurations with their open-loop levels driven by ghz,
 *       the standard gRPC load tool, as a client the service's owner does not control:
 *       {@code grpc-none-ghz} and {@code grpc-spillway-plain-ghz} ({@code Run.ghzOpen}, read by {@link
 *       GhzReport}). Their warm-up and closed-loop reading are {@link DemoLoad}'s, as the other gRPC
 *       rows'; {@code grpc-none-ghz} sets the gRPC capacity when no {@code grpc-none} has. Skipped,
 *       with one line saying so, when no {@code ghz} is on {@code PATH} or in {@code ~/go/bin}.
 * </ul>
 *
 * <p>Per configuration: start, warm-up under a closed loop ({@code warm} seconds), that
 * configuration's own closed-loop throughput read as the socket harness reads capacity ({@link
 * SteadyCapacity}: one-second slices until the last three agree within 5 % and neither the
 * application's compilers, read through the Actuator, nor this JVM's ran for more than 15 % of any
 * of them; a Spring application compiles for tens of seconds), an open-loop warm-up at half
 * capacity for 3 s where this harness drives the levels, then each demand level open-loop for 2 s
 * + {@code seconds}, the last {@code seconds} counted, with a 3 s pause between levels. Capacity
 * (docs/design.md, "Measures": the highest throughput the server reaches with no control) is the
 * {@code none} configuration's closed-loop throughput over HTTP, and {@code grpc-none}'s over gRPC;
 * it is kept in {@code DIR/state.properties}, with the SLO, so a run can be split into several
 * calls ({@code --configs}). The SLO, unless {@code --slo-us} sets it, is Breakwater §5.1's 10 ×
 * (mean service time + RTT), measured as 10 × the mean end-to-end latency over HTTP at 5 % of
 * capacity, rounded up to 100 µs, and passed to the application as {@code spillway.slo}.
 *
 * <p>HTTP demand: {@code h2load -c 4 -m 100 --rps R/4 -D T -H ':method: POST' --log-file F}:
 * HTTP/2 in clear text (the application sets {@code server.http2.enabled=true}), 4 connections of
 * up to 100 streams each (Tomcat's default cap per connection). Not HTTP/1.1: h2load 1.52 records
 * no status for an HTTP/1.1 answer whose status line has no reason phrase, and Tomcat sends none.
 * Few connections because h2load's rate mode sends each connection's requests on that connection's
 * own timer, and the timers of all connections fire together: with C connections requests arrive
 * in bursts of C, which on one core is C service times of queueing (docs/results/spring.md). Each request's start time, status and latency come from the log file:
 * goodput counts 2xx answers within the SLO, rejects are 503 and 429, percentiles come from
 * HdrHistogram. Latency runs from when h2load sends a request; with 400 outstanding h2load holds
 * further requests back (it is then closed-loop), so for a server that queues without bound the
 * offered rate falls: the table shows the rate h2load actually sent.
 *
 * <p>Output: {@code DIR/results.json} (the report's schema), {@code table.txt}, {@code
 * report.md} and plots, each application's log, and the h2load commands.
 */
public final class SpringDemoMain {

  private static final String MAIN = "io.spillway.examples.spring.InventoryApplication";
  private static final String GRPC_METHOD = "spillway.inventory.Inventory/Reserve";
  private static final int H2LOAD_CONNECTIONS = 4;
  /** Tomcat's default cap on concurrent streams per HTTP/2 connection. */
  private static final int H2LOAD_STREAMS = 100;
  /** Closed loop: requests outstanding on each of the {@link #H2LOAD_CONNECTIONS} connections. */
  private static final int CLOSED_STREAMS = 2;
  private static final int GRPC_CHANNELS = 8;
  private static final int GRPC_OUTSTANDING = 8;
  private static final double LEVEL_WARM_S = 2;
  private static final double PAUSE_S = 3;
  static final List<String> ALL = List.of("none", "grpc-none", "resilience4j", "concurrency-limits",
      "spillway", "spillway-poisson", "spillway-client-side", "spillway-credits",
      "grpc-spillway-plain", "grpc-spillway-credits", "grpc-spillway-spring-client", "grpc-none-ghz",
      "grpc-spillway-plain-ghz", "none-http1", "spillway-http1");
  /** Configurations run only when named: the peers with HTTP/1.1 clients. */
  static final List<String> NAMED_ONLY = List.of("resilience4j-http1", "concurrency-limits-http1");
  /**
   * The suffix of a configuration whose clients speak HTTP/1.1 ({@link HttpDemoLoad.Protocol#HTTP1},
   * {@link #HTTP1_CONNECTIONS} keep-alive connections), plain clients, for every level and its
   * closed-loop reading; the application is the configuration without the suffix.
   */
  static final String HTTP1 = "-http1";
  /**
   * HTTP/1.1 clients' connections: at most as many requests in the server as h2load's {@link
   * #H2LOAD_CONNECTIONS} connections of {@link #H2LOAD_STREAMS} streams hold.
   */
  static final int HTTP1_CONNECTIONS = H2LOAD_CONNECTIONS * H2LOAD_STREAMS;
  /** The gRPC configurations whose open-loop levels ghz drives, not {@link DemoLoad}. */
  static final List<String> GHZ = List.of("grpc-none-ghz", "grpc-spillway-plain-ghz");
  /** ghz's connections: as many as {@link DemoLoad}'s channels. */
  private static final int GHZ_CONNECTIONS = GRPC_CHANNELS;
  /** The HTTP configurations whose open-loop levels {@link HttpDemoLoad} drives, not h2load. */
  private static final List<String> OWN_HTTP_LOAD = List.of("spillway-poisson",
      "spillway-client-side", "spillway-credits");
  /** A generator's own warm-up before its first level: open loop at this share of capacity. */
  private static final double GENERATOR_WARM_LOAD = 0.5;
  private static final double GENERATOR_WARM_S = 3;

  /**
   * Arguments added to every application's command line ({@code --app-arg}, repeatable): a
   * property a configuration is measured with beyond its defaults, which the results then no
   * longer show as defaults.
   */
  private static final List<String> APP_ARGS = new java.util.ArrayList<>();
  /**
   * Options added to every application's JVM ({@code --app-jvm-arg}, repeatable): for example the
   * {@code --add-opens} that lets the starter put virtual threads on its measured carriers.
   */
  private static final List<String> APP_JVM_ARGS = new java.util.ArrayList<>();
  /**
   * The cgroup.procs files of the CPU-quota group every application starts in ({@code
   * --cpu-quota}, {@link CpuQuotaGroup}); empty for none.
   */
  private static final List<Path> JOIN_GROUPS = new java.util.ArrayList<>();
  /** The cores of that group's CPU limit ({@code --cpu-quota}). */
  private static double QUOTA_CORES;

  /**
   * The HTTP endpoint every HTTP configuration drives ({@code --http METHOD:PATH}): {@code
   * POST:/reservations} by default; {@code GET:/statements} is the pool-bound endpoint of the
   * application's {@code statements} profile (docs/results/spring.md, "A pool-bound service").
   */
  private static String httpMethod = "POST";
  /**
   * The application's servlet container ({@code --container}): {@code tomcat}, examples-spring as
   * it ships, or {@code jetty}, the same application from examples-spring-jetty (Tomcat excluded,
   * {@code spring-boot-starter-jetty} added). Recorded in the results' scenario.
   */
  private static String container = "tomcat";
  private static String httpPath = "/reservations";

  /**
   * The most one-second slices a configuration's closed-loop reading runs: the socket harness's
   * {@link SteadyCapacity} rule, with room for a Spring application's longer compilation.
   */
  static final int CLOSED_MAX_SLICES = 90;

  private SpringDemoMain() { }

  public static void main(String[] args) throws Exception {
    Path out = Path.of("results/spring-demo");
    double seconds = 8;
    double warm = 5;
    List<String> configs = ALL;
    List<Double> levels = List.of(1.0, 2.0, 3.0);
    Long sloMicros = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Path.of(args[++i]);
        case "--seconds" -> seconds = Double.parseDouble(args[++i]);
        case "--warm" -> warm = Double.parseDouble(args[++i]);
        case "--configs" -> configs = List.of(args[++i].split(","));
        case "--levels" -> levels = List.of(args[++i].split(",")).stream().map(Double::parseDouble).toList();
        case "--slo-us" -> sloMicros = Long.parseLong(args[++i]);
        case "--app-arg" -> APP_ARGS.add(args[++i]);
        case "--app-jvm-arg" -> APP_JVM_ARGS.add(args[++i]);
        case "--container" -> {
          container = args[++i];
          if (!List.of("tomcat", "jetty").contains(container)) {
            throw new IllegalArgumentException("--container takes tomcat or jetty, not " + container);
          }
        }
        case "--cpu-quota" -> {
          QUOTA_CORES = Double.parseDouble(args[++i]);
          JOIN_GROUPS.addAll(CpuQuotaGroup.create(QUOTA_CORES));
        }
        case "--http" -> {
          String[] target = args[++i].split(":", 2);
          if (target.length != 2 || !List.of("GET", "POST").contains(target[0])
              || !target[1].startsWith("/")) {
            throw new IllegalArgumentException("--http takes GET:/path or POST:/path, not "
                + args[i]);
          }
          httpMethod = target[0];
          httpPath = target[1];
        }
        case "-h", "--help" -> {
          System.out.println("./spillway spring-demo [--out DIR] [--seconds S] [--warm S] "
              + "[--configs " + String.join(",", ALL) + "] (or " + String.join(",", NAMED_ONLY)
              + ") [--levels 1,2,3] [--slo-us N] "
              + "[--app-arg --spring.property=value ...] [--app-jvm-arg OPTION ...] "
              + "[--container tomcat|jetty] "
              + "[--http POST:/reservations] "
              + "[--cpu-quota CORES]");
          return;
        }
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    for (String c : configs) {
      if (!ALL.contains(c) && !NAMED_ONLY.contains(c)) {
        throw new IllegalArgumentException("unknown configuration " + c + "; known: " + ALL + ", "
            + NAMED_ONLY);
      }
    }
    String classpathKey = container.equals("jetty") ? "spillway.spring.jetty.classpath"
        : "spillway.spring.classpath";
    String classpath = System.getProperty(classpathKey);
    if (classpath == null) {
      throw new IllegalStateException("-D" + classpathKey + " is not set (the launcher sets it)");
    }
    Path ghz = findGhz(System.getenv("PATH"), Path.of(System.getProperty("user.home")));
    if (ghz == null && configs.stream().anyMatch(GHZ::contains)) {
      System.out.println("spring-demo: ghz is not on PATH or in ~/go/bin; skipping "
          + configs.stream().filter(GHZ::contains).toList()
          + " (go install github.com/bojand/ghz/cmd/ghz@v0.120.0)");
      configs = configs.stream().filter(c -> !GHZ.contains(c)).toList();
    }
    Files.createDirectories(out);
    new SpringDemoMain.Run(out, classpath, seconds, warm, levels, sloMicros, ghz).run(configs);
  }

  /**
   * The ghz binary in a directory of {@code path} (a {@code PATH} value, may be null), else in
   * {@code home/go/bin} (where {@code go install} puts it), else null.
   */
  static Path findGhz(String path, Path home) {
    List<Path> dirs = new ArrayList<>();
    if (path != null) {
      for (String d : path.split(java.io.File.pathSeparator)) {
        if (!d.isEmpty()) {
          dirs.add(Path.of(d));
        }
      }
    }
    dirs.add(home.resolve("go").resolve("bin"));
    for (Path d : dirs) {
      Path candidate = d.resolve("ghz");
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return candidate;
      }
    }
    return null;
  }

  /** One call: some configurations, added to what {@code out} already holds. */
  private static final class Run {
    final Path out;
    final String classpath;
    final double seconds;
    final double warm;
    final List<Double> levels;
    final Properties state = new Properties();
    /** Whether this run read a capacity itself, rather than taking one from {@code state}. */
    boolean capacityMeasured;
    final Path stateFile;
    final Path records;
    final int serverCore;
    final Path ghz;

    Run(Path out, String classpath, double seconds, double warm, List<Double> levels,
        Long sloMicros, Path ghz) throws IOException {
      this.ghz = ghz;
      this.out = out;
      this.classpath = classpath;
      this.seconds = seconds;
      this.warm = warm;
      this.levels = levels;
      this.stateFile = out.resolve("state.properties");
      this.records = out.resolve("records.jsonl");
      if (Files.exists(stateFile)) {
        try (Reader r = Files.newBufferedReader(stateFile)) {
          state.load(r);
        }
      }
      if (sloMicros != null) {
        state.setProperty("slo_us", Long.toString(sloMicros));
      }
      String endpoint = httpMethod + " " + httpPath;
      if (!endpoint.equals(state.getProperty("http_endpoint", endpoint))) {
        throw new IllegalArgumentException(out + " holds a run of " + state.getProperty(
            "http_endpoint") + ", not " + endpoint + ": its capacity and SLO are that endpoint's");
      }
      state.setProperty("http_endpoint", endpoint);
      // The launcher pins this JVM (and so h2load) to core 1; the application takes core 0.
      serverCore = GrpcDemoMain.cores() >= 2 && Files.isExecutable(Path.of("/usr/bin/taskset")) ? 0 : -1;
    }

    void run(List<String> configs) throws Exception {
      System.out.printf(Locale.ROOT, "spring-demo: server on core %s, h2load %d connections, gRPC "
          + "%d channels; %s s per level after %s s; state %s%n", serverCore < 0 ? "any" : "0",
          H2LOAD_CONNECTIONS, GRPC_CHANNELS, seconds, LEVEL_WARM_S, state);
      for (String config : configs) {
        if (config.startsWith("grpc-")) {
          runGrpc(config);
        } else {
          runHttp(config);
        }
        saveState();
        writeResults();
      }
    }

    // ---- HTTP ------------------------------------------------------------------------------

    void runHttp(String config) throws Exception {
      if (config.endsWith(HTTP1)) {
        runHttp1(config);
        return;
      }
      boolean calibrate = config.equals("none") && !state.containsKey("capacity_http");
      try (App app = App.start(config, sloMicros(), serverCore, classpath,
          out.resolve("app-" + config + ".log"), state.getProperty("inventory_rounds"))) {
        System.out.println(config + ": " + app.ready);
        keepRounds(app);
        h2loadClosed(app.httpPort, warm, config + "-warm");
        closedLoop(config, config.equals("none"), "capacity_http", app,
            index -> Math.round(h2loadClosed(app.httpPort, SteadyCapacity.SLICE_NANOS / 1e9,
                config + "-closed")),
            H2LOAD_CONNECTIONS + " connections x " + CLOSED_STREAMS + " streams");
        double capacity = need("capacity_http");
        if (calibrate || !state.containsKey("slo_us")) {
          pause();
          OpenResult idle = h2loadOpen(app.httpPort, 0.05 * capacity, 6, config + "-unloaded",
              Long.MAX_VALUE);
          double mean = idle.ok.getMean() / 1e3;
          state.setProperty("unloaded_mean_us", String.format(Locale.ROOT, "%.0f", mean));
          state.setProperty("unloaded_p99_us", String.format(Locale.ROOT, "%.0f",
              idle.ok.getValueAtPercentile(99) / 1e3));
          if (!state.containsKey("slo_us")) {
            long slo = (long) Math.ceil(10 * mean / 100.0) * 100;
            state.setProperty("slo_us", Long.toString(slo));
          }
          System.out.printf(Locale.ROOT, "unloaded (0.05x) over HTTP: mean %.0f us, p99 %s us; SLO "
              + "%s us%n", mean, state.getProperty("unloaded_p99_us"), state.getProperty("slo_us"));
        }
        long sloNanos = need("slo_us").longValue() * 1000;
        if (OWN_HTTP_LOAD.contains(config)) {
          HttpDemoLoad.ClientSide side = switch (config) {
            case "spillway-client-side" -> HttpDemoLoad.ClientSide.PUSHBACK;
            case "spillway-credits" -> HttpDemoLoad.ClientSide.CREDITS;
            default -> HttpDemoLoad.ClientSide.PLAIN;
          };
          try (HttpDemoLoad load = new HttpDemoLoad(app.httpPort, H2LOAD_CONNECTIONS, side,
              sloNanos, httpMethod, httpPath)) {
            ownLoadLevels(config, load, capacity);
          }
        } else {
          for (double level : levels) {
            pause();
            OpenResult r = h2loadOpen(app.httpPort, level * capacity, seconds,
                config + "-" + level + "x", sloNanos);
            record(config, "http", level, capacity, r.offered, r.ok.getTotalCount() / seconds,
                r.good / seconds, r.ok, r.rejects, r.errors, 0, "unanswered=" + r.unanswered);
          }
        }
        if (config.equals("spillway")) {
          saveActuator(app.httpPort, config);
        }
      }
    }

    /**
     * A configuration whose clients speak HTTP/1.1: {@link HttpDemoLoad} over {@link
     * #HTTP1_CONNECTIONS} keep-alive connections for the closed-loop reading ({@link
     * #H2LOAD_CONNECTIONS} x {@link #CLOSED_STREAMS} requests outstanding, as h2load's) and every
     * level. Its capacity is {@code none-http1}'s closed-loop throughput ({@code capacity_http1});
     * the SLO is the HTTP/2 one, from {@code none}, so the two protocols are held to the same
     * target.
     */
    void runHttp1(String config) throws Exception {
      String application = config.substring(0, config.length() - HTTP1.length());
      long sloNanos = need("slo_us").longValue() * 1000;
      try (App app = App.start(application, sloMicros(), serverCore, classpath,
          out.resolve("app-" + config + ".log"), state.getProperty("inventory_rounds"));
          HttpDemoLoad load = new HttpDemoLoad(app.httpPort, HttpDemoLoad.Protocol.HTTP1,
              HTTP1_CONNECTIONS, HttpDemoLoad.ClientSide.PLAIN, sloNanos, httpMethod, httpPath)) {
        System.out.println(config + ": " + app.ready);
        keepRounds(app);
        int outstanding = H2LOAD_CONNECTIONS * CLOSED_STREAMS;
        load.closedLoop(outstanding, (long) (warm * 1e9));
        closedLoop(config, application.equals("none"), "capacity_http1", app,
            index -> Math.round(load.closedLoop(outstanding, SteadyCapacity.SLICE_NANOS)),
            "HTTP/1.1, " + outstanding + " requests outstanding");
        ownLoadLevels(config, load, need("capacity_http1"));
        if (application.equals("spillway")) {
          saveActuator(app.httpPort, config);
        }
      }
    }

    /**
     * A configuration's own closed-loop throughput, read in slices as the socket harness reads
     * capacity ({@link SteadyCapacity}), printed with {@code shape} and kept as {@code
     * closed_CONFIG}; from the unprotected application it is also the capacity, kept as {@code
     * capacityKey}.
     */
    void closedLoop(String config, boolean unprotected, String capacityKey, App app,
        SteadyCapacity.Slice slice, String shape) throws Exception {
      SteadyCapacity.Measured steady = SteadyCapacity.measure(slice, () -> jitMillis(app),
          CLOSED_MAX_SLICES);
      double own = steady.reading().rps();
      System.out.println(steady.describe(config + ": closed-loop throughput", " (" + shape + ")",
          CLOSED_MAX_SLICES));
      state.setProperty("closed_" + config, String.format(Locale.ROOT, "%.0f", own));
      if (unprotected) {
        if (own <= 0) {
          throw new IOException("the unprotected application served nothing in its closed loop "
              + "(see " + out.resolve("app-" + config + ".log") + ")");
        }
        state.setProperty(capacityKey, String.format(Locale.ROOT, "%.0f", own));
        capacityMeasured = true;
      }
    }

    /**
     * {@link HttpDemoLoad}'s open-loop warm-up at {@link #GENERATOR_WARM_LOAD} of capacity, then
     * each level, recorded.
     */
    void ownLoadLevels(String config, HttpDemoLoad load, double capacity) throws Exception {
      load.openLoop(GENERATOR_WARM_LOAD * capacity, 0, (long) (GENERATOR_WARM_S * 1e9), 0);
      for (double level : levels) {
        pause();
        DemoLoad.Result r = load.openLoop(level * capacity, (long) (LEVEL_WARM_S * 1e9),
            (long) (seconds * 1e9), 1 + Math.round(level * 100));
        record(config, "http", level, capacity, r.issued() / seconds, r.throughputRps(),
            r.goodputRps(), r.okLatency(), r.serverRejects(), r.errors(), r.clientRejects(),
            r.rejectsByReason() + refusalDelay(r));
      }
    }

    /** The starter's own view after the run: /actuator/spillway and the rejects by reason. */
    void saveActuator(int port, String config) {
      java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder()
          .version(java.net.http.HttpClient.Version.HTTP_1_1).build();
      StringBuilder text = new StringBuilder();
      for (String path : List.of("/actuator/spillway", "/actuator/metrics/spillway.requests.rejected",
          "/actuator/metrics/spillway.requests.admitted", "/actuator/metrics/spillway.budget.aborts")) {
        try {
          String body = http.send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + port + path)).build(),
              java.net.http.HttpResponse.BodyHandlers.ofString()).body();
          text.append(path).append('\n').append(body).append("\n\n");
        } catch (IOException | InterruptedException e) {
          text.append(path).append(": ").append(e).append("\n\n");
        }
      }
      try {
        Files.writeString(out.resolve("actuator-" + config + ".txt"), text);
      } catch (IOException e) {
        System.out.println("could not write the actuator snapshot: " + e);
      }
    }

    /**
     * h2load with {@code CLOSED_STREAMS} requests always outstanding on each of its connections
     * (the open-loop runs' connections); 2xx answers per second. Few outstanding: with dozens, as
     * many Tomcat threads share the one core and preempt each other inside the inventory lock, and
     * the unprotected server's throughput falls well below what it reaches at lower concurrency.
     */
    /**
     * The application's compilers' milliseconds so far (Micrometer's {@code jvm.compilation.time},
     * through the Actuator) plus this JVM's, or -1 where either does not say.
     */
    static long jitMillis(App app) {
      try (var client = java.net.http.HttpClient.newHttpClient()) {
        var response = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                "http://127.0.0.1:" + app.httpPort + "/actuator/metrics/jvm.compilation.time"))
                .timeout(java.time.Duration.ofSeconds(10)).build(),
            java.net.http.HttpResponse.BodyHandlers.ofString());
        Matcher m = Pattern.compile("\"value\"\\s*:\\s*([0-9.]+)").matcher(response.body());
        return response.statusCode() == 200 && m.find()
            ? SteadyCapacity.withOwnJit((long) Double.parseDouble(m.group(1))) : -1;
      } catch (IOException e) {
        return -1;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return -1;
      }
    }

    double h2loadClosed(int port, double secs, String label) throws Exception {
      List<String> cmd = List.of("h2load", "-c", Integer.toString(H2LOAD_CONNECTIONS),
          "-m", Integer.toString(CLOSED_STREAMS), "-t", "1", "-D", fmt(secs),
          "-H", ":method: " + httpMethod, url(port));
      String summary = runTool(cmd, label);
      Matcher m = Pattern.compile("status codes: (\\d+) 2xx, \\d+ 3xx, (\\d+) 4xx, (\\d+) 5xx")
          .matcher(summary);
      if (!m.find()) {
        throw new IOException("no status line from h2load (" + label + "): " + summary);
      }
      long ok = Long.parseLong(m.group(1));
      long refused = Long.parseLong(m.group(2)) + Long.parseLong(m.group(3));
      if (ok == 0 && refused == 0) {
        throw new IOException("no answer from the application (" + label + "): " + summary);
      }
      // A slice whose every request was refused reads 0: a protected application may refuse all
      // of a closed loop for a while (while its compilers run, say); that is a result, not a fault.
      return ok / secs;
    }

    /** What one open-loop h2load run saw inside its measured window. */
    record OpenResult(double offered, Histogram ok, long good, long rejects, long errors,
        long unanswered) { }

    OpenResult h2loadOpen(int port, double rps, double measure, String label, long sloNanos)
        throws Exception {
      Path log = Files.createTempFile("spillway-h2load", ".log"); // every request: not a result
      try {
        double total = LEVEL_WARM_S + measure;
        List<String> cmd = List.of("h2load", "-c", Integer.toString(H2LOAD_CONNECTIONS),
            "-m", Integer.toString(H2LOAD_STREAMS), "-t", "1", "--rps",
            String.format(Locale.ROOT, "%.4f", rps / H2LOAD_CONNECTIONS), "-D", fmt(total),
            "-H", ":method: " + httpMethod, "--log-file", log.toString(), url(port));
        Files.writeString(out.resolve("h2load-command.txt"), String.join(" ", cmd).replace(
            log.toString(), "LOG") + "\n");
        String summary = runTool(cmd, label);
        Matcher m = Pattern.compile("requests: (\\d+) total, (\\d+) started, (\\d+) done, (\\d+) "
            + "succeeded, (\\d+) failed, (\\d+) errored, (\\d+) timeout").matcher(summary);
        if (!m.find()) {
          throw new IOException("no request line from h2load (" + label + "): " + summary);
        }
        long started = Long.parseLong(m.group(2));
        long done = Long.parseLong(m.group(3));
        long errored = Long.parseLong(m.group(6)) + Long.parseLong(m.group(7));
        List<long[]> rows = new ArrayList<>();
        long first = Long.MAX_VALUE;
        try (BufferedReader in = Files.newBufferedReader(log)) {
          for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.split("\t");
            if (f.length < 3) {
              continue;
            }
            long at = Long.parseLong(f[0].trim());
            rows.add(new long[] {at, Long.parseLong(f[1].trim()), Long.parseLong(f[2].trim())});
            first = Math.min(first, at);
          }
        }
        long from = first + (long) (LEVEL_WARM_S * 1e6);
        long to = from + (long) (measure * 1e6);
        Histogram ok = new Histogram(3_600_000_000_000L, 3);
        long good = 0;
        long rejects = 0;
        long errors = 0;
        for (long[] r : rows) {
          if (r[0] < from || r[0] >= to) {
            continue;
          }
          long latencyNanos = r[2] * 1000;
          if (r[1] >= 200 && r[1] < 300) {
            ok.recordValue(Math.max(1, latencyNanos));
            if (latencyNanos <= sloNanos) {
              good++;
            }
          } else if (r[1] == 503 || r[1] == 429) {
            rejects++;
          } else {
            errors++;
          }
        }
        // Errors h2load does not log (a reset connection): counted over the whole run.
        return new OpenResult(started / total, ok, good, rejects, errors + errored,
            started - done);
      } finally {
        Files.deleteIfExists(log);
      }
    }

    String runTool(List<String> cmd, String label) throws Exception {
      Path log = out.resolve("h2load-" + label + ".txt");
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      if (!p.waitFor(600, TimeUnit.SECONDS)) {
        p.destroyForcibly().waitFor();
        throw new IOException("h2load did not finish: " + label);
      }
      String text = Files.readString(log);
      // Only the summaries of measured runs are worth keeping beside the results.
      if (label.endsWith("-warm")) {
        Files.deleteIfExists(log);
      }
      return text;
    }

    // ---- gRPC ------------------------------------------------------------------------------

    void runGrpc(String config) throws Exception {
      String profile = config.startsWith("grpc-none") ? "none" : "spillway";
      DemoLoad.Kind kind = switch (config) {
        case "grpc-spillway-credits" -> DemoLoad.Kind.AWARE;
        case "grpc-spillway-spring-client" -> DemoLoad.Kind.SPRING_CLIENT;
        default -> DemoLoad.Kind.PLAIN;
      };
      long sloNanos = need("slo_us").longValue() * 1000;
      try (App app = App.start(profile, sloMicros(), serverCore, classpath,
          out.resolve("app-" + config + ".log"), state.getProperty("inventory_rounds"));
          DemoLoad load = new DemoLoad(List.of(app.grpcPort), GRPC_CHANNELS, kind, sloNanos,
              GRPC_METHOD)) {
        System.out.println(config + ": " + app.ready);
        keepRounds(app);
        load.closedLoop(GRPC_OUTSTANDING, (long) (warm * 1e9), 1);
        SteadyCapacity.Measured steady = SteadyCapacity.measure(
            index -> Math.round(load.closedLoop(GRPC_OUTSTANDING, 0, SteadyCapacity.SLICE_NANOS)
                * SteadyCapacity.SLICE_NANOS / 1e9),
            () -> jitMillis(app), CLOSED_MAX_SLICES);
        double own = steady.reading().rps();
        System.out.println(steady.describe(config + ": closed-loop throughput", " ("
            + GRPC_OUTSTANDING + " outstanding)", CLOSED_MAX_SLICES));
        state.setProperty("closed_" + config, String.format(Locale.ROOT, "%.0f", own));
        if (config.equals("grpc-none")
            || (config.equals("grpc-none-ghz") && !state.containsKey("capacity_grpc"))) {
          state.setProperty("capacity_grpc", String.format(Locale.ROOT, "%.0f", own));
          capacityMeasured = true;
        }
        double capacity = need("capacity_grpc");
        if (GHZ.contains(config)) {
          ghzWarm(config, app, capacity, sloNanos);
          for (double level : levels) {
            pause();
            ghzOpen(config, app.grpcPort, level, capacity, sloNanos);
          }
          return;
        }
        // Served calls compile the service's path. A gated configuration's closed loop may have
        // been refused nearly whole (under a CPU limit, the compilers themselves fill the quota),
        // which would leave the compiling to the first levels.
        load.openLoop(GENERATOR_WARM_LOAD * capacity, 0, (long) (GENERATOR_WARM_S * 1e9), 0);
        for (double level : levels) {
          pause();
          long[] throttled = JOIN_GROUPS.isEmpty() ? null : CpuQuotaGroup.throttling(JOIN_GROUPS);
          long[] cpu = ThreadCpu.read(app.process.pid());
          long from = System.nanoTime();
          DemoLoad.Result r = load.openLoop(level * capacity, (long) (LEVEL_WARM_S * 1e9),
              (long) (seconds * 1e9), 1 + Math.round(level * 100));
          if (throttled != null) {
            // The compilers' and collector's CPU draws on the quota as the service's does.
            System.out.printf(Locale.ROOT, "%s %.1fx: %s; %s%n", config, level,
                CpuQuotaGroup.describe(throttled, CpuQuotaGroup.throttling(JOIN_GROUPS)),
                ThreadCpu.describe(cpu, ThreadCpu.read(app.process.pid()),
                    Math.round(QUOTA_CORES * (System.nanoTime() - from) / 1e6)));
          }
          String spring = load.springSessions();
          record(config, "grpc", level, capacity, r.issued() / seconds, r.throughputRps(),
              r.goodputRps(), r.okLatency(), r.serverRejects(), r.errors(), r.clientRejects(),
              r.rejectsByReason() + refusalDelay(r) + (spring.isEmpty() ? "" : "; " + spring));
        }
      }
    }

    /**
     * One level driven by ghz: {@code --rps} at {@code level} × capacity for {@code LEVEL_WARM_S +
     * seconds}, the calls that started in the last {@code seconds} counted ({@link GhzReport});
     * how ghz is run, {@link #runGhz}.
     */
    void ghzOpen(String config, int port, double level, double capacity, long sloNanos)
        throws Exception {
      long rps = Math.max(1, Math.round(level * capacity));
      String label = config + "-" + level + "x";
      Path json = runGhz(port, rps, LEVEL_WARM_S + seconds, label);
      try {
        GhzReport.Result r;
        try (var in = new java.io.BufferedInputStream(Files.newInputStream(json), 1 << 16)) {
          r = GhzReport.read(in, LEVEL_WARM_S, seconds, sloNanos, rps);
        }
        record(config, "grpc", level, capacity, r.startedRps(), r.throughputRps(), r.goodputRps(),
            r.okLatency(), r.rejects(), r.errors(), 0, GhzReport.describe(r, rps));
      } finally {
        Files.deleteIfExists(json);
      }
    }

    /**
     * ghz's own warm-up before its levels: one-second ghz runs at capacity until the application's
     * compilers are quiet ({@link SteadyCapacity#warm}). Each ghz run is a new process on new
     * connections, and the server's first calls on them deoptimize the read and write paths it
     * compiled without them; on the one server core that recompilation took up to half of a
     * level's time in the gRPC demo (docs/results/grpc.md, "ghz as the plain client"). The Java
     * generator's warm-up, on connections it keeps, does not compile for them; these runs do, as
     * each level will.
     */
    void ghzWarm(String config, App app, double capacity, long sloNanos) throws Exception {
      long rps = Math.max(1, Math.round(capacity));
      SteadyCapacity.Slices slices = SteadyCapacity.warm(index -> {
        Path json = runGhz(app.grpcPort, rps, 1, config + "-warm");
        try (var in = new java.io.BufferedInputStream(Files.newInputStream(json), 1 << 16)) {
          return GhzReport.read(in, 0, 1, sloNanos, rps).ok();
        } finally {
          Files.deleteIfExists(json);
        }
      }, () -> jitMillis(app), CLOSED_MAX_SLICES);
      System.out.println(SteadyCapacity.describeWarm(config + ": ghz warm-up (one ghz run a slice)",
          0, 1.0, slices));
    }

    /**
     * Runs ghz for {@code seconds} at {@code rps} and returns its JSON report (the caller deletes
     * it). ghz's workers each make one call at a time and its pacer hands them its ticks, so a
     * rate is kept only while a worker is free: the workers are the rate × the calls' deadline,
     * the most calls the rate can have in flight even against a server that answers none of them
     * before the deadline, so ghz stays open-loop however the server behaves. The deadline is the
     * Java generator's ({@link DemoLoad#DEADLINE_MS}): a plain call's only budget on the server.
     * {@code --duration-stop wait} lets the calls in flight at the end finish (within their
     * deadline) instead of being cut off and counted as errors. ghz runs as a child of this JVM,
     * so it is on this JVM's core, as h2load is.
     */
    Path runGhz(int port, long rps, double seconds, String label) throws Exception {
      long concurrency = Math.max(GHZ_CONNECTIONS,
          (long) Math.ceil(rps * DemoLoad.DEADLINE_MS / 1000.0));
      Path proto = Path.of("examples-spring/src/main/proto/inventory.proto").toAbsolutePath();
      if (!Files.isRegularFile(proto)) {
        throw new IOException("ghz needs " + proto + " (run from the repository's root)");
      }
      Path json = Files.createTempFile("spillway-ghz", ".json"); // every call: not a result
      boolean done = false;
      try {
        List<String> cmd = List.of(ghz.toString(), "--insecure", "--proto", proto.toString(),
            "--call", "spillway.inventory.Inventory.Reserve",
            // One SKU, no template: every SKU costs the service the same work (InventoryService),
            // and ghz filling in a template for each call more than doubled its CPU a call
            // (about 230 against 105 us at 3,000 calls a second on one core), which one core
            // cannot spare at 3x
            "-d", "{\"sku\":7}", "--disable-template-functions", "--disable-template-data",
            "--rps", Long.toString(rps), "--concurrency", Long.toString(concurrency),
            "--connections", Integer.toString(GHZ_CONNECTIONS),
            "--timeout", DemoLoad.DEADLINE_MS + "ms",
            "-z", fmt(seconds) + "s", "--duration-stop", "wait",
            "-O", "json", "-o", json.toString(), "127.0.0.1:" + port);
        Files.writeString(out.resolve("ghz-command.txt"), String.join(" ", cmd)
            .replace(json.toString(), "JSON").replace(proto.toString(),
                "examples-spring/src/main/proto/inventory.proto") + "\n");
        Path log = out.resolve("ghz-" + label + ".txt");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
            .start();
        if (!p.waitFor(600, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor();
          throw new IOException("ghz did not finish: " + label);
        }
        if (p.exitValue() != 0 || Files.size(json) == 0) {
          throw new IOException("ghz failed (" + label + ", exit " + p.exitValue() + "): "
              + Files.readString(log));
        }
        if (Files.size(log) == 0) {
          Files.delete(log);
        }
        done = true;
        return json;
      } finally {
        if (!done) {
          Files.deleteIfExists(json);
        }
      }
    }

    /** How long the server's refusals took to reach the clients, from each call's scheduled send. */
    static String refusalDelay(DemoLoad.Result r) {
      Histogram refused = r.rejectLatency();
      return refused.getTotalCount() == 0 ? "" : String.format(Locale.ROOT,
          "; refusals reached the client after p50 %.2f / p99 %.2f ms",
          refused.getValueAtPercentile(50) / 1e6, refused.getValueAtPercentile(99) / 1e6);
    }

    // ---- results ---------------------------------------------------------------------------

    Long sloMicros() {
      String v = state.getProperty("slo_us");
      return v == null ? null : Long.parseLong(v);
    }

    Double need(String key) {
      String v = state.getProperty(key);
      if (v == null) {
        throw new IllegalStateException(key + " is not known yet: run the "
            + (key.contains("grpc") ? "grpc-none" : "none") + " configuration first (same --out)");
      }
      return Double.parseDouble(v);
    }

    void record(String config, String endpoint, double level, double capacity, double offered,
        double throughput, double goodput, Histogram ok, long rejects, long errors,
        long clientRejects, String note) throws IOException {
      double p50 = ok.getTotalCount() == 0 ? 0 : ok.getValueAtPercentile(50) / 1e3;
      double p99 = ok.getTotalCount() == 0 ? 0 : ok.getValueAtPercentile(99) / 1e3;
      long received = ok.getTotalCount() + rejects + errors;
      String json = String.format(Locale.ROOT, "{\"scheme\": \"%s\", \"endpoint\": \"%s\", "
          + "\"demand\": %.2f, \"capacity_rps\": %.0f, \"offered_rps\": %.0f, \"throughput_rps\": "
          + "%.0f, \"goodput_rps\": %.0f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"slo_us\": %d, "
          + "\"drop_rate\": %s, \"rejects\": %d, \"errors\": %d, \"client_rejects\": %d, "
          + "\"note\": \"%s\"}", config, endpoint, level, capacity, offered, throughput, goodput,
          p50, p99, need("slo_us").longValue(),
          GrpcDemoMain.share(io.spillway.sim.Tally.ratio(rejects, received)),
          rejects, errors, clientRejects, note);
      Files.writeString(records, json + "\n", StandardCharsets.UTF_8,
          java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
      System.out.println(row(config, level, offered, goodput / capacity, p50, p99, rejects, errors,
          clientRejects, note));
    }

    /** Which generator, and which kind of client, drives a configuration's open-loop levels. */
    static String clients(String config) {
      if (GHZ.contains(config)) {
        return "ghz";
      }
      if (config.equals("grpc-spillway-credits")) {
        return "java-session";
      }
      if (config.equals("grpc-spillway-spring-client")) {
        return "spring-client";
      }
      if (config.startsWith("grpc-")) {
        return "java-plain";
      }
      if (OWN_HTTP_LOAD.contains(config)) {
        return "java-http";
      }
      if (config.endsWith(HTTP1)) {
        return "java-http1";
      }
      return "h2load";
    }

    static String header() {
      return String.format(Locale.ROOT, "%-23s %-12s %6s %9s %8s %9s %9s %8s %7s %9s  %s",
          "configuration", "clients", "load", "offered", "good/cap", "p50_ms", "p99_ms", "rejects", "errors",
          "client_rj", "note");
    }

    static String row(String config, double level, double offered, double norm, double p50,
        double p99, long rejects, long errors, long clientRejects, String note) {
      return String.format(Locale.ROOT, "%-23s %-12s %5.1fx %9.0f %8.3f %9.2f %9.2f %8d %7d %9d  %s",
          config, clients(config), level, offered, norm, p50 / 1e3, p99 / 1e3, rejects, errors, clientRejects, note);
    }

    /**
     * The first application's calibrated work, kept in the state and given to every later start
     * ({@code inventory.rounds}), so that every configuration of a run, and of later calls on the
     * same directory, serves the same work (InventoryService's class comment: a calibration read
     * while the JIT is busy can be two to three times off).
     */
    void keepRounds(App app) {
      if (state.getProperty("inventory_rounds") != null) {
        return;
      }
      java.util.regex.Matcher m = java.util.regex.Pattern
          .compile("inventory ready: (\\d+) \\+ (\\d+) hash rounds").matcher(app.ready);
      if (!m.find()) {
        throw new IllegalStateException("no hash rounds in the application's ready line: " + app.ready);
      }
      state.setProperty("inventory_rounds", m.group(1) + "," + m.group(2));
      state.setProperty("service_line", app.ready);
    }

    void saveState() throws IOException {
      try (Writer w = Files.newBufferedWriter(stateFile)) {
        state.store(w, "spring-demo: capacities, SLO and closed-loop throughputs of this run");
      }
    }

    /** results.json from every record so far, the latest per configuration and level. */
    void writeResults() throws IOException {
      Map<String, String> latest = new LinkedHashMap<>();
      Map<String, double[]> numbers = new LinkedHashMap<>();
      Map<String, String[]> texts = new LinkedHashMap<>();
      Pattern num = Pattern.compile("\"(\\w+)\": (-?[0-9.]+)");
      Pattern str = Pattern.compile("\"(scheme|note)\": \"([^\"]*)\"");
      for (String line : Files.readAllLines(records)) {
        Map<String, Double> n = new LinkedHashMap<>();
        Matcher m = num.matcher(line);
        while (m.find()) {
          n.put(m.group(1), Double.parseDouble(m.group(2)));
        }
        Matcher s = str.matcher(line);
        String scheme = null;
        String note = "";
        while (s.find()) {
          if (s.group(1).equals("scheme")) {
            scheme = s.group(2);
          } else {
            note = s.group(2);
          }
        }
        String key = scheme + "@" + n.get("demand");
        latest.remove(key); // keeps the order of the latest run
        latest.put(key, line);
        numbers.put(key, new double[] {n.get("demand"), n.get("offered_rps"),
            n.get("goodput_rps") / n.get("capacity_rps"), n.get("p50_us"), n.get("p99_us"),
            n.get("rejects"), n.get("errors"), n.get("client_rejects")});
        texts.put(key, new String[] {scheme, note});
      }
      List<String> table = new ArrayList<>();
      table.add(header());
      for (String key : latest.keySet()) {
        double[] v = numbers.get(key);
        table.add(row(texts.get(key)[0], v[0], v[1], v[2], v[3], v[4], (long) v[5], (long) v[6],
            (long) v[7], texts.get(key)[1]));
      }
      StringBuilder json = new StringBuilder("{\n  \"scenario\": {\"name\": \"spring-demo\", "
          + "\"description\": \"examples-spring's inventory service (Spring Boot 4.0.7, Tomcat, "
          + "Spring gRPC) on core 0, flooded from core 1\"");
      for (String k : state.stringPropertyNames().stream().sorted().toList()) {
        json.append(", \"").append(k).append("\": \"").append(state.getProperty(k).replace("\"", "'"))
            .append('"');
      }
      // Arguments beyond the defaults: the rows then no longer show the starter's defaults.
      if (!APP_ARGS.isEmpty()) {
        json.append(", \"app_args\": \"").append(String.join(" ", APP_ARGS).replace("\"", "'"))
            .append('"');
      }
      if (!APP_JVM_ARGS.isEmpty()) {
        json.append(", \"app_jvm_args\": \"")
            .append(String.join(" ", APP_JVM_ARGS).replace("\"", "'")).append('"');
      }
      json.append(", \"container\": \"").append(container).append('"');
      json.append(String.format(Locale.ROOT, ", \"java\": \"%s\", \"cores\": \"%d\"},%n",
          System.getProperty("java.version"), GrpcDemoMain.cores()));
      json.append("  \"capacity_measured\": ").append(capacityMeasured).append(",\n");
      json.append("  \"records\": [\n    ").append(String.join(",\n    ", latest.values()))
          .append("\n  ]\n}\n");
      Path results = out.resolve(ReportWriter.RESULTS_FILE);
      Files.writeString(results, json);
      Files.writeString(out.resolve("table.txt"), String.join("\n", table) + "\n");
      ReportWriter.write(results, out);
      System.out.println(String.join("\n", table));
    }

    static String url(int port) {
      return "http://127.0.0.1:" + port + httpPath;
    }

    static String fmt(double seconds) {
      return String.format(Locale.ROOT, "%.0f", seconds);
    }

    static void pause() throws InterruptedException {
      Thread.sleep((long) (PAUSE_S * 1000)); // lets a flooded server drain between levels
    }
  }

  /** The inventory application in its own JVM, pinned to {@code core} where that is possible. */
  private static final class App implements AutoCloseable {
    final Process process;
    final int httpPort;
    final int grpcPort;
    final String ready;

    private App(Process process, int httpPort, int grpcPort, String ready) {
      this.process = process;
      this.httpPort = httpPort;
      this.grpcPort = grpcPort;
      this.ready = ready;
    }

    /**
     * Starts the application for {@code config} ({@code spillway} runs the default profile: the
     * starter as it ships).
     *
     * @param rounds {@code inventory.rounds} to give it, or {@code null} to let it calibrate
     */
    static App start(String config, Long sloMicros, int core, String classpath, Path log,
        String rounds) throws Exception {
      // The two ports are free when chosen and bound by the application seconds later; in between
      // the kernel may hand one to a client socket (they are in its ephemeral range). Such a start
      // fails on its bind alone and is retried on other ports.
      for (int attempt = 1; ; attempt++) {
        try {
          return startOnce(config, sloMicros, core, classpath, log, rounds);
        } catch (IOException e) {
          if (attempt == 3 || !Files.exists(log)
              || !Files.readString(log).contains("Address already in use")) {
            throw e;
          }
          System.out.println("spring-demo: a port the application was given was taken before it "
              + "bound it; starting it again on other ports");
        }
      }
    }

    private static App startOnce(String config, Long sloMicros, int core, String classpath,
        Path log, String rounds) throws Exception {
      int http = freePort();
      int grpc = freePort();
      List<String> cmd = new ArrayList<>(CpuQuotaGroup.joinCommand(JOIN_GROUPS));
      if (core >= 0) {
        cmd.addAll(List.of("/usr/bin/taskset", "-c", Integer.toString(core)));
      }
      cmd.add(ProcessHandle.current().info().command().orElse("java"));
      // Each collection's pause, beside the application's log: a pause holds every request in
      // flight, so it shows in the tail latency whatever the admission control does.
      Path gcLog = log.resolveSibling(log.getFileName().toString().replaceFirst("^app-", "gc-"));
      cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-Xmn512m",
          "-XX:+AlwaysPreTouch", "-Xlog:gc:file=" + gcLog));
      cmd.addAll(APP_JVM_ARGS);
      cmd.addAll(List.of("-cp", classpath, MAIN,
          "--server.port=" + http,
          "--spring.grpc.server.port=" + grpc));
      String profile = config.startsWith("spillway") ? null : config;
      if (profile != null) {
        cmd.add("--spring.profiles.active=" + profile);
      }
      if (sloMicros != null) {
        cmd.add("--spillway.slo=" + sloMicros + "us");
      }
      if (rounds != null) {
        cmd.add("--inventory.rounds=" + rounds);
      }
      cmd.addAll(APP_ARGS);
      ProcessBuilder builder = new ProcessBuilder(cmd).redirectErrorStream(true);
      // The launcher's SPILLWAY_PINNED would reach Spring as the property spillway.pinned.
      builder.environment().remove("SPILLWAY_PINNED");
      Process p = builder.start();
      CountDownLatch started = new CountDownLatch(1);
      String[] readyLine = new String[1];
      Thread copier = Thread.ofPlatform().daemon().name("app-log").start(() -> {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
            StandardCharsets.UTF_8)); PrintStream file = new PrintStream(log.toFile(), StandardCharsets.UTF_8)) {
          file.println(String.join(" ", cmd));
          for (String line; (line = in.readLine()) != null; ) {
            file.println(line);
            if (line.startsWith("inventory ready")) {
              readyLine[0] = line;
              started.countDown();
            }
          }
        } catch (IOException e) {
          // the process ended: start() sees the latch unreleased
        } finally {
          started.countDown();
        }
      });
      if (!started.await(180, TimeUnit.SECONDS) || readyLine[0] == null) {
        p.destroyForcibly().waitFor();
        copier.join(5_000);
        throw new IOException("the inventory application did not start (see " + log + ")");
      }
      return new App(p, http, grpc, readyLine[0]);
    }

    static int freePort() throws IOException {
      try (ServerSocket s = new ServerSocket(0)) {
        return s.getLocalPort();
      }
    }

    @Override
    public void close() throws Exception {
      process.destroy();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    }
  }
}
