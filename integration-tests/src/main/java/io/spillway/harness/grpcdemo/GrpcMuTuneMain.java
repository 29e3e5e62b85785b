package io.spillway.harness.grpcdemo;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.spillway.harness.LeafHandler;
import io.spillway.harness.MuTuneMain;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * µTune's in-line/dispatch choice on gRPC, on real sockets (mutune-osdi18 §3.1, §4): the live choice
 * against both static executors over a low-to-high sweep. The mid-tier ({@link
 * GrpcMidTierServer}, core 0) serves {@code Demo/Work} by fanning out to 4 leaves that answer after
 * 100 µs; the leaves and an open-loop Poisson gRPC generator ({@link DemoLoad}, plain clients) share
 * core 1, as in the socket experiment ({@link MuTuneMain}).
 *
 * <ul>
 *   <li>{@code grpc-train}: in-line (IB: calls run on the transport thread, as {@code
 *       directExecutor()}) and dispatch (DB16: on 16 workers) at each load; writes {@code
 *       grpc-train.csv} and the profile the adaptation reads ({@code grpc-profile.csv}), every
 *       repetition kept.
 *   <li>{@code grpc-sweep}: both static executors and the adaptive choice (from {@code --profile})
 *       at each load: p50/p99/p999, throughput, the mid-tier's CPU; writes {@code grpc-sweep.csv}.
 *   <li>{@code grpc-plot DIR}: redraws DIR's figures from its CSVs.
 * </ul>
 *
 * <p>Options: {@code --out DIR}, {@code --loads a,b,..}, {@code --seconds S} (5), {@code --reps R}
 * (3), {@code --profile FILE}, {@code --channels N} (4 gRPC channels). Each load runs 1 s before its
 * measured {@code S} seconds; a call's latency counts from its scheduled time.
 */
public final class GrpcMuTuneMain {

  private static final long SLO_NANOS = 10_000_000; // sorts "good" responses only; µTune's measure is the p99
  private static final String HEADER =
      "config,offered_rps,rep,achieved_rps,goodput_rps,p50_us,p90_us,p99_us,p999_us,midtier_cpu,note\n";

  private final Map<String, String> options;
  private final Path out;
  private final boolean pin;

  private GrpcMuTuneMain(Map<String, String> options) throws IOException {
    this.options = options;
    this.out = Path.of(options.getOrDefault("out", "results/mutune-grpc"));
    Files.createDirectories(out);
    this.pin = MuTuneMain.canPin();
  }

  /** {@code grpc-train|grpc-sweep [--option value ...]}. */
  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("grpc-plot")) {
      for (String what : List.of("grpc-train", "grpc-sweep")) {
        if (Files.exists(Path.of(args[1], what + ".csv"))) {
          plot(Path.of(args[1]), what);
        }
      }
      System.exit(0);
    }
    if (args.length < 1 || !List.of("grpc-train", "grpc-sweep").contains(args[0])) {
      System.err.println("usage: mutune grpc-train|grpc-sweep [--out DIR] [--profile FILE] [--loads a,b,..]"
          + " [--seconds S] [--reps R] [--channels N]");
      System.err.println("       mutune grpc-plot DIR   (redraws DIR's figures from its CSVs)");
      System.exit(2);
    }
    Map<String, String> options = new java.util.LinkedHashMap<>();
    for (int i = 1; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --option value, got '" + args[i] + "'");
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    GrpcMuTuneMain m = new GrpcMuTuneMain(options);
    if (args[0].equals("grpc-train")) {
      m.train();
    } else {
      m.sweep();
    }
    System.exit(0);
  }

  private static final List<String> STATIC = List.of("IB", "DB16");

  private void train() throws Exception {
    List<Double> loads = loads("100,500,1500,3000,4500,6000,8000,10000");
    StringBuilder csv = new StringBuilder(HEADER);
    ThreadingProfile.Builder profile = ThreadingProfile.builder();
    for (String model : STATIC) {
      for (String[] row : runLevels("static:" + model, loads)) {
        csv.append(String.join(",", row)).append('\n');
        double p99us = Double.parseDouble(row[7]);
        // no answer within the deadline, or a p99 past a second: saturated, recorded as one second
        profile.add(ThreadingModel.parse(model), Double.parseDouble(row[1]),
            (Double.isNaN(p99us) ? 1e6 : Math.min(p99us, 1e6)) * 1e3);
      }
    }
    profile.build().write(out.resolve("grpc-profile.csv"));
    write("grpc-train", csv);
  }

  private void sweep() throws Exception {
    String profile = options.get("profile");
    if (profile == null) {
      throw new IllegalArgumentException("--profile FILE is needed (mutune grpc-train writes grpc-profile.csv)");
    }
    List<Double> loads = loads("100,1000,2000,3500,5000,7000,9000");
    StringBuilder csv = new StringBuilder(HEADER);
    List<String> configs = new ArrayList<>();
    STATIC.forEach(m -> configs.add("static:" + m));
    configs.add("adaptive:" + Path.of(profile).toAbsolutePath());
    for (String config : configs) {
      for (String[] row : runLevels(config, loads)) {
        csv.append(String.join(",", row)).append('\n');
      }
    }
    write("grpc-sweep", csv);
  }

  private void write(String what, StringBuilder csv) throws IOException {
    Files.writeString(out.resolve(what + ".csv"), csv);
    System.out.print(csv);
    plot(out, what);
  }

  /** Draws {@code DIR/WHAT-p99-by-load.png} from {@code DIR/WHAT.csv}: the median p99 of the repetitions. */
  static void plot(Path out, String what) throws IOException {
    // MuTuneMain draws sweep.csv: give it a directory with ours under that name
    Path plots = Files.createDirectories(out.resolve(what + "-plot"));
    Files.copy(out.resolve(what + ".csv"), plots.resolve("sweep.csv"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    MuTuneMain.plotDirectory(plots, "gRPC mid-tier with 4 leaves");
    Files.move(plots.resolve("sweep-p99-by-load.png"), out.resolve(what + "-p99-by-load.png"),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    Files.delete(plots.resolve("sweep.csv"));
    Files.delete(plots);
  }

  private List<Double> loads(String fallback) {
    List<Double> loads = new ArrayList<>();
    for (String l : options.getOrDefault("loads", fallback).split(",")) {
      loads.add(Double.parseDouble(l.strip()));
    }
    return loads;
  }

  /**
   * Each load {@code --reps} times on one mid-tier process, after a warm-up; a run whose median
   * passes 200 ms ends the configuration (saturated: higher loads only queue more). The median, not
   * the p99: a stall of the host lifts one run's p99 past 200 ms while the model keeps up. Rows as
   * {@link #HEADER}.
   */
  private List<String[]> runLevels(String config, List<Double> loads) throws Exception {
    int reps = Integer.parseInt(options.getOrDefault("reps", "3"));
    if (reps < 1) {
      throw new IllegalArgumentException("--reps must be at least 1, got " + reps);
    }
    long measure = (long) (Double.parseDouble(options.getOrDefault("seconds", "5")) * 1e9);
    String name = config.startsWith("adaptive:") ? "mutune" : config.substring("static:".length());
    List<String[]> rows = new ArrayList<>();
    try (Run run = new Run(config)) {
      run.warm();
      levels:
      for (double load : loads) {
        for (int rep = 0; rep < reps; rep++) {
          long cpu0 = run.cpuTicks();
          DemoLoad.Result r = run.load.openLoop(load, 1_000_000_000L, measure, 1 + rep);
          double cpu = (run.cpuTicks() - cpu0) / 100.0 / ((1e9 + measure) / 1e9);
          Histogram h = r.okLatency();
          boolean any = h.getTotalCount() > 0;
          String[] row = {name, String.format(Locale.ROOT, "%.0f", load), Integer.toString(rep),
              String.format(Locale.ROOT, "%.0f", r.throughputRps()), String.format(Locale.ROOT, "%.0f", r.goodputRps()),
              us(any, h, 50), us(any, h, 90), us(any, h, 99), us(any, h, 99.9),
              String.format(Locale.ROOT, "%.3f", cpu), run.model() + (r.errors() > 0 ? "/errors=" + r.errors() : "")};
          rows.add(row);
          System.err.println(String.join(",", row));
          if (!any || h.getValueAtPercentile(50) > 200_000_000L) {
            break levels;
          }
        }
      }
    }
    return rows;
  }

  private static String us(boolean any, Histogram h, double percentile) {
    return any ? String.format(Locale.ROOT, "%.1f", h.getValueAtPercentile(percentile) / 1e3) : "NaN";
  }

  /** A mid-tier process, the leaves on this JVM's loop, and the gRPC generator. */
  private final class Run implements AutoCloseable {
    final Process process;
    final BufferedReader stdout;
    final NioEventLoopGroup leafLoop = new NioEventLoopGroup(1);
    final Channel leaves;
    final DemoLoad load;

    Run(String config) throws Exception {
      int leafPort;
      try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
        leafPort = s.getLocalPort();
      }
      leaves = new ServerBootstrap().group(leafLoop).channel(NioServerSocketChannel.class)
          .childOption(ChannelOption.TCP_NODELAY, true)
          .childHandler(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new LeafHandler(MuTuneMain.LEAF_DELAY_NANOS));
            }
          }).bind(new InetSocketAddress("127.0.0.1", leafPort)).sync().channel();
      List<String> cmd = new ArrayList<>();
      if (pin) {
        cmd.addAll(List.of("/usr/bin/taskset", "-c", "0"));
      }
      cmd.add(ProcessHandle.current().info().command().orElse("java"));
      cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch",
          "-XX:MetaspaceSize=256m", "--enable-native-access=ALL-UNNAMED",
          "-cp", System.getProperty("java.class.path"), GrpcMidTierServer.class.getName(),
          Integer.toString(leafPort), Integer.toString(MuTuneMain.LEAVES), Integer.toString(MuTuneMain.LOCAL_WORK_US),
          config));
      Path log = out.resolve("grpc-midtier-" + (config.startsWith("adaptive:") ? "adaptive"
          : config.replaceAll("[^A-Za-z0-9]", "_")) + ".log");
      process = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
      stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      String line = stdout.readLine();
      if (line == null || !line.startsWith("SPILLWAY-PORT ")) {
        process.destroyForcibly().waitFor();
        throw new IOException("gRPC mid-tier " + config + " did not start (" + line + "); see " + log);
      }
      int port = Integer.parseInt(line.substring("SPILLWAY-PORT ".length()).strip());
      load = new DemoLoad(port, Integer.parseInt(options.getOrDefault("channels", "4")), false, SLO_NANOS);
    }

    /**
     * JIT warm-up: 1,000 calls a second (below in-line's saturation) in 3 s rounds until a round adds
     * under 50 ms of compilation to the mid-tier, at most 20 rounds. gRPC's code keeps C2 busy for
     * tens of seconds on one core, and a compiler sharing the mid-tier's core is latency.
     */
    void warm() throws Exception {
      long before = jitMillis();
      for (int round = 0; round < 20; round++) {
        load.openLoop(1_000, 2_000_000_000L, 1_000_000_000L, 0);
        long now = jitMillis();
        System.err.println("grpc mid-tier warm-up round " + round + ": " + (now - before) + " ms compiling");
        if (now - before < 50) {
          return;
        }
        before = now;
      }
    }

    private long jitMillis() throws IOException {
      process.getOutputStream().write("jit\n".getBytes(StandardCharsets.UTF_8));
      process.getOutputStream().flush();
      String line = stdout.readLine();
      return line == null || !line.startsWith("jit ") ? -1 : Long.parseLong(line.substring(4).strip());
    }

    String model() throws IOException {
      process.getOutputStream().write("model\n".getBytes(StandardCharsets.UTF_8));
      process.getOutputStream().flush();
      String line = stdout.readLine();
      return line == null ? "?" : line.replace("SPILLWAY-MODEL ", "model=").replace(' ', '/');
    }

    long cpuTicks() throws IOException {
      return MuTuneMain.cpuTicks(process);
    }

    @Override
    public void close() throws Exception {
      load.close();
      process.getOutputStream().close();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
      leaves.close().sync();
      leafLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
  }
}
