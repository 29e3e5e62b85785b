package io.spillway.harness;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.credit.Spillway;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What a native server's core spends at a light, fixed load under a scheme, beside no control: the
 * cost that per-request microbenchmarks do not see (periodic work: a scheme's control timer, the
 * tasks its ticks cause on the event loops).
 *
 * <p>Each configuration runs in a server JVM of its own, pinned to core 0 where there are two
 * ({@link MuTuneMain#canPin}), opened for the carrier dispatcher, its handler an echo; this JVM,
 * pinned to core 1 by the launcher, sends 16-byte calls on one plain session at fixed intervals
 * (not Poisson: the load is light and the interval is not what is measured), warms up for {@code
 * --warmup} seconds and reads the server process's CPU from {@code /proc} over {@code --seconds}.
 * Configurations and rates are interleaved run by run, so a drift of this VM falls on all of them.
 *
 * <p>{@code ./spillway server-cpu [--schemes none,spillway:10000,tick:1000] [--rates 100,5000]
 * [--reps 2] [--warmup 10] [--seconds 10]}. Schemes: {@code none}; {@code spillway:SLO_US}, the
 * default scheme for that SLO ({@link Spillway#forSloNanos}); {@code spillway-own-timer:SLO_US}, the
 * same with its gate ticking on a timer thread of its own, not on the server's control loop; {@code
 * tick:PERIOD_US}, no control plus a no-op task every period on the server's control loop (the
 * scheduler gates are given).
 * Prints one row per run: scheme, rate, repetition, the server's CPU in cores.
 */
public final class ServerCpuMain {

  private ServerCpuMain() { }

  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("server")) {
      serve(args[1]);
      return;
    }
    java.util.Map<String, String> options = new java.util.LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --option value, got '" + args[i] + "'");
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    List<String> schemes = List.of(options.getOrDefault("schemes", "none,spillway:10000,tick:1000").split(","));
    for (String s : schemes) {
      scheme(s); // a bad name fails here, before any run
    }
    List<Double> rates = new ArrayList<>();
    for (String r : options.getOrDefault("rates", "100,5000").split(",")) {
      rates.add(Double.parseDouble(r.strip()));
    }
    int reps = Integer.parseInt(options.getOrDefault("reps", "2"));
    long warmup = (long) (Double.parseDouble(options.getOrDefault("warmup", "10")) * 1e9);
    long measure = (long) (Double.parseDouble(options.getOrDefault("seconds", "10")) * 1e9);
    System.out.println("scheme,rate_rps,rep,server_cpu_cores");
    for (int rep = 0; rep < reps; rep++) {
      for (String s : schemes) {
        for (double rate : rates) {
          double cpu = run(s, rate, warmup, measure);
          System.out.printf(Locale.ROOT, "%s,%.0f,%d,%.3f%n", s, rate, rep, cpu);
          System.out.flush();
        }
      }
    }
    System.exit(0);
  }

  private static double run(String scheme, double rate, long warmupNanos, long measureNanos) throws Exception {
    List<String> cmd = new ArrayList<>();
    if (MuTuneMain.canPin()) {
      cmd.addAll(List.of("/usr/bin/taskset", "-c", "0"));
    }
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "--enable-native-access=ALL-UNNAMED",
        "--add-opens", "java.base/java.lang=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"), ServerCpuMain.class.getName(), "server", scheme));
    Process server = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
      String line = out.readLine();
      if (line == null || !line.startsWith(HarnessServer.PORT_LINE)) {
        throw new IllegalStateException("server " + scheme + " did not start: " + line);
      }
      int port = Integer.parseInt(line.substring(HarnessServer.PORT_LINE.length()).strip());
      try (SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).port(port)
          .sloNanos(10_000_000_000L).build().start()) {
        long gap = (long) (1e9 / rate);
        long next = System.nanoTime();
        next = send(client, next, gap, next + warmupNanos);
        long cpu0 = MuTuneMain.cpuTicks(server);
        long t0 = System.nanoTime();
        send(client, next, gap, t0 + measureNanos);
        long cpu1 = MuTuneMain.cpuTicks(server);
        return (cpu1 - cpu0) / 100.0 / ((System.nanoTime() - t0) / 1e9);
      }
    } finally {
      server.getOutputStream().close(); // the server stops when its standard input closes
      server.waitFor();
    }
  }

  /** Sends a call every {@code gap} nanoseconds from {@code next} until {@code end}; returns the next time. */
  private static long send(SpillwayClient client, long next, long gap, long end) {
    while (next - end < 0) {
      next += gap;
      while (System.nanoTime() - next < 0) {
        Thread.onSpinWait();
      }
      client.session(0).call(new byte[16]);
    }
    return next;
  }

  private static void serve(String scheme) throws Exception {
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme(scheme))
        .handler((req, alloc) -> req.retainedDuplicate()).build().start()) {
      System.out.println(HarnessServer.PORT_LINE + server.port());
      System.out.flush();
      while (System.in.read() >= 0) {
        // serve until standard input closes
      }
    }
    System.exit(0);
  }

  static OverloadScheme scheme(String spec) {
    String s = spec.strip();
    if (s.equals("none")) {
      return NoControl.INSTANCE;
    }
    if (s.startsWith("spillway:")) {
      return Spillway.forSloNanos(Long.parseLong(s.substring("spillway:".length())) * 1_000);
    }
    if (s.startsWith("spillway-own-timer:")) {
      return new OwnTimer(Spillway.forSloNanos(Long.parseLong(s.substring("spillway-own-timer:".length())) * 1_000));
    }
    if (s.startsWith("tick:")) {
      long period = Long.parseLong(s.substring("tick:".length())) * 1_000;
      if (period <= 0) {
        throw new IllegalArgumentException("tick period must be positive: " + spec);
      }
      return new Ticking(period);
    }
    throw new IllegalArgumentException("unknown scheme '" + spec
        + "': none, spillway:SLO_US, spillway-own-timer:SLO_US or tick:PERIOD_US");
  }

  /**
   * A scheme whose server gate ticks on a timer thread of its own instead of the scheduler the
   * server gives it (the server's control loop, a network event loop): to tell what the loop pays
   * for the timer from what the gate's work costs.
   */
  private record OwnTimer(OverloadScheme inner) implements OverloadScheme {
    private static final io.spillway.api.Scheduler TIMER = io.spillway.api.Scheduler.of(
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "gate-timer");
          t.setDaemon(true);
          return t;
        }));

    @Override
    public String name() {
      return inner.name() + "-own-timer";
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment e) {
      return inner.newServerGate(new ServerEnvironment(e.ticker(), TIMER, e.queueDelay(), e.control(),
          e.metrics(), e.parallelism(), e.reportsStarts()));
    }

    @Override
    public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
      return inner.newClientGate(environment);
    }
  }

  /** No control, plus a no-op task every period on the scheduler the server gives its gate. */
  private record Ticking(long periodNanos) implements OverloadScheme {
    @Override
    public String name() {
      return "tick";
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      ServerGate none = NoControl.INSTANCE.newServerGate(environment);
      return new ServerGate() {
        private io.spillway.api.Cancellable ticking;

        @Override
        public ServerPermit admit(RequestMetadata request, long nowNanos) {
          return none.admit(request, nowNanos);
        }

        @Override
        public void deregister(long sessionId, long nowNanos) {
          none.deregister(sessionId, nowNanos);
        }

        @Override
        public void start() {
          ticking = environment.scheduler().every(periodNanos, () -> { });
        }

        @Override
        public void close() {
          if (ticking != null) {
            ticking.cancel();
          }
        }
      };
    }

    @Override
    public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
      return NoControl.INSTANCE.newClientGate(environment);
    }
  }
}
