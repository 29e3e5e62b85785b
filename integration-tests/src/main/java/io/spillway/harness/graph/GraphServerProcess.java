package io.spillway.harness.graph;

import io.spillway.harness.AheadOfTimeCache;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A {@link GraphServer} child process: every service of the graph, or those a {@link
 * GraphPlacement} puts on one core, one scheme at a time, pinned to a core when asked. Closing it
 * closes its stdin, which stops it.
 *
 * <p>Not thread-safe; used by the harness's main thread.
 */
final class GraphServerProcess implements AutoCloseable {

  /** The name of the first (or only) process's logs: {@code graph-server.log}, {@code gc-graph-server.log}. */
  static final String MAIN = "graph-server";

  /** Runs a command at a lower priority (coreutils); {@link #niceAvailable()} says whether it is here. */
  static final String NICE = "/usr/bin/nice";

  private final Process process;
  private final BufferedReader stdout;
  private final OutputStream stdin;
  private Map<String, Integer> ports;
  private final Path log;

  /** The services process's id (the JVM's: {@code taskset} and {@code nice} exec it). */
  long pid() {
    return process.pid();
  }

  private GraphServerProcess(Process process, BufferedReader stdout, Map<String, Integer> ports, Path log) {
    this.process = process;
    this.stdout = stdout;
    this.stdin = process.getOutputStream();
    this.ports = ports;
    this.log = log;
  }

  /**
   * Starts the services of {@code scenarioFile} (with {@code overrides}) under {@code scheme}, and
   * waits until they listen. Logs go to {@code out}: {@code graph-server.log} (stderr) and {@code
   * gc-graph-server.log}.
   */
  static GraphServerProcess start(Path scenarioFile, Map<String, String> overrides, String scheme,
      boolean pin, Path out) throws IOException {
    return start(scenarioFile, overrides, scheme, pin ? 0 : -1, 0, out, null, Map.of(), MAIN);
  }

  /**
   * Starts the services {@code only} names ({@code null}: every service) of {@code scenarioFile}
   * (with {@code overrides}) under {@code scheme}, their callees elsewhere at the ports {@code
   * remote} gives, pinned to {@code core} (none if negative), at niceness {@code nice} (0: the
   * harness's own; higher runs it at a lower priority, which any user may ask), and waits until
   * they listen. Logs go to {@code out}: {@code NAME.log} (stderr) and {@code gc-NAME.log}. Only
   * the {@link #MAIN} process writes the ahead-of-time cache while training it; the others start
   * from it.
   */
  static GraphServerProcess start(Path scenarioFile, Map<String, String> overrides, String scheme,
      int core, int nice, Path out, List<String> only, Map<String, Integer> remote, String name) throws IOException {
    List<String> cmd = new ArrayList<>();
    if (nice > 0) {
      cmd.addAll(List.of(NICE, "-n", Integer.toString(nice)));
    }
    if (core >= 0) {
      cmd.addAll(List.of("/usr/bin/taskset", "-c", Integer.toString(core)));
    }
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    if (name.equals(MAIN) || !Boolean.getBoolean(AheadOfTimeCache.TRAIN)) {
      cmd.addAll(AheadOfTimeCache.serverOptions());
    }
    // Under overload every call in flight holds gRPC stream objects; a young generation touched in
    // advance keeps a collection from paying for first-touch page faults (seen: 0.7 s pauses).
    cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms2g", "-Xmx2g", "-Xmn1g", "-XX:+AlwaysPreTouch",
        "-XX:MetaspaceSize=256m",
        // Stamped with the wall clock too, to match pauses with surge-windows.csv's epoch_ms.
        "-Xlog:gc:file=" + out.resolve("gc-" + name + ".log") + ":uptime,timemillis",
        "--enable-native-access=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"), GraphServer.class.getName(),
        scenarioFile.toString(), scheme));
    if (only != null) {
      cmd.addAll(List.of(GraphServer.ONLY, String.join(",", only)));
    }
    if (!remote.isEmpty()) {
      cmd.addAll(List.of(GraphServer.REMOTE, GraphServer.formatPorts(remote, ",")));
    }
    overrides.forEach((k, v) -> cmd.add(k + "=" + v));
    Path log = out.resolve(name + ".log");
    Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
    BufferedReader stdout = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    try {
      return new GraphServerProcess(p, stdout, readPorts(stdout, scheme, log), log);
    } catch (IOException e) {
      p.destroyForcibly();
      throw e;
    }
  }

  /** Whether {@link #NICE} can be run, so that a niceness above 0 can be asked for. */
  static boolean niceAvailable() {
    return Files.isExecutable(Path.of(NICE));
  }

  /** Restarts every service under {@code scheme}, in the same process; their ports change. */
  void switchTo(String scheme) throws IOException {
    switchTo(scheme, Map.of());
  }

  /**
   * Restarts every service under {@code scheme}, in the same process, their callees elsewhere at
   * the ports {@code remote} gives (none given: those it had); their ports change.
   */
  void switchTo(String scheme, Map<String, Integer> remote) throws IOException {
    String command = GraphServer.SCHEME_COMMAND + scheme
        + (remote.isEmpty() ? "" : " " + GraphServer.formatPorts(remote, " "));
    stdin.write((command + "\n").getBytes(StandardCharsets.US_ASCII));
    stdin.flush();
    ports = readPorts(stdout, scheme, log);
  }

  private static Map<String, Integer> readPorts(BufferedReader stdout, String scheme, Path log) throws IOException {
    String line = stdout.readLine();
    if (line == null || !line.startsWith(GraphServer.PORTS_LINE)) {
      throw new IOException("graph server for " + scheme + " did not start (first line: " + line + "); see " + log);
    }
    Map<String, Integer> ports = new LinkedHashMap<>();
    for (String item : line.substring(GraphServer.PORTS_LINE.length()).strip().split(" ")) {
      int eq = item.indexOf('=');
      ports.put(item.substring(0, eq), Integer.parseInt(item.substring(eq + 1)));
    }
    return ports;
  }

  /** The port of every service this process runs, by name. */
  Map<String, Integer> ports() {
    return ports;
  }

  /**
   * The services' counters since start: {@code service.interface} → calls computed (see {@link
   * ServiceGraph#stats()}).
   */
  Map<String, Long> computed() throws IOException {
    stdin.write("stats\n".getBytes(StandardCharsets.US_ASCII));
    stdin.flush();
    String line = stdout.readLine();
    if (line == null || !line.startsWith(GraphServer.STATS_LINE)) {
      throw new IOException("graph server answered '" + line + "' to stats; see " + log);
    }
    Map<String, Long> computed = new LinkedHashMap<>();
    String body = line.substring(GraphServer.STATS_LINE.length()).strip();
    if (!body.isEmpty()) {
      for (String item : body.split(" ")) {
        int eq = item.indexOf('=');
        int slash = item.indexOf('/', eq);
        computed.put(item.substring(0, eq), Long.parseLong(item.substring(eq + 1, slash)));
      }
    }
    return computed;
  }

  /**
   * The time the process's JIT has spent compiling since it started, ms; -1 if its JVM does not
   * say ({@link GraphServer#compileMillis}).
   */
  long compileMillis() throws IOException {
    stdin.write("jit\n".getBytes(StandardCharsets.US_ASCII));
    stdin.flush();
    String line = stdout.readLine();
    if (line == null || !line.startsWith(GraphServer.JIT_LINE)) {
      throw new IOException("graph server answered '" + line + "' to jit; see " + log);
    }
    return Long.parseLong(line.substring(GraphServer.JIT_LINE.length()).strip());
  }

  /**
   * Closes the process's stdin, which stops it; kills it if it has not stopped in 10 s (5 minutes
   * while it trains its ahead-of-time cache, {@link AheadOfTimeCache#exitWaitSeconds}).
   */
  @Override
  public void close() throws IOException {
    stdin.close();
    try {
      if (!process.waitFor(AheadOfTimeCache.exitWaitSeconds(), TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
