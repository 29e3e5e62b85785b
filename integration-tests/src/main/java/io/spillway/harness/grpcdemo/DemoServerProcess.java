package io.spillway.harness.grpcdemo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@link DemoServer} in its own JVM, pinned to a core where {@code taskset} and a second core
 * exist. The JVM gets no Spillway-specific options unless asked (no {@code --add-opens} by
 * default): what a team that adds the dependency and nothing else runs. Closing it closes the server's standard input, which stops
 * it.
 */
final class DemoServerProcess implements AutoCloseable {

  private final Process process;
  private final BufferedReader stdout;
  private final int port;

  private DemoServerProcess(Process process, BufferedReader stdout, int port) {
    this.process = process;
    this.stdout = stdout;
    this.port = port;
  }

  static DemoServerProcess start(String mode, long serviceMicros, long sloMillis, int core, Path log)
      throws IOException {
    return start(mode, serviceMicros, sloMillis, 0, core, log, false);
  }

  /** As above, each handler then blocking {@code blockMicros} off-core ({@link DemoService}). */
  static DemoServerProcess start(String mode, long serviceMicros, long sloMillis, long blockMicros,
      int core, Path log) throws IOException {
    return start(mode, serviceMicros, sloMillis, blockMicros, core, log, false);
  }

  /**
   * As above; with {@code addOpens} the JVM opens java.lang to the unnamed module, so that
   * Spillway's carrier dispatcher measures the virtual threads' carriers (docs/design.md).
   */
  static DemoServerProcess start(String mode, long serviceMicros, long sloMillis, long blockMicros,
      int core, Path log, boolean addOpens) throws IOException {
    return start(mode, serviceMicros, sloMillis, blockMicros, core, log, addOpens, List.of());
  }

  /**
   * As above, the JVM started inside the control groups whose {@code cgroup.procs} files are
   * given (a CPU quota, {@link CpuQuotaGroup}), before its first instruction, as a container's
   * process is.
   */
  static DemoServerProcess start(String mode, long serviceMicros, long sloMillis, long blockMicros,
      int core, Path log, boolean addOpens, List<Path> joinGroups) throws IOException {
    List<String> cmd = new ArrayList<>(CpuQuotaGroup.joinCommand(joinGroups));
    if (core >= 0) {
      cmd.addAll(List.of("/usr/bin/taskset", "-c", Integer.toString(core)));
    }
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    // Each collection's pause, beside the server's log: a pause holds every call in flight.
    Path gcLog = log.resolveSibling(
        log.getFileName().toString().replaceFirst("\\.log$", "") + "-gc.log");
    cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-Xmn512m", "-XX:+AlwaysPreTouch",
        "-Xlog:gc:file=" + gcLog, "--enable-native-access=ALL-UNNAMED"));
    if (addOpens) {
      cmd.addAll(List.of("--add-opens", "java.base/java.lang=ALL-UNNAMED"));
    }
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"),
        DemoServer.class.getName(), mode, Long.toString(serviceMicros), Long.toString(sloMillis),
        Long.toString(blockMicros)));
    Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.US_ASCII));
    String line = out.readLine();
    if (line == null || !line.startsWith("port ")) {
      p.destroyForcibly();
      throw new IOException("demo server did not start (see " + log + "): " + line);
    }
    return new DemoServerProcess(p, out, Integer.parseInt(line.substring(5).trim()));
  }

  int port() {
    return port;
  }

  /** The server JVM's process id ({@code taskset} runs it in its own process), for {@link ThreadCpu}. */
  long pid() {
    return process.pid();
  }

  /** Milliseconds the server JVM's compilers have spent so far, or -1 if it does not say. */
  long compileMillis() throws IOException {
    return ask("jit");
  }

  /** Nanoseconds of CPU the server process has used so far, every thread's, or -1 if it does not say. */
  long cpuNanos() throws IOException {
    return ask("cpu");
  }

  /** Sends {@code command} on the server's standard input and reads its answer, "COMMAND N". */
  private long ask(String command) throws IOException {
    var in = process.getOutputStream();
    in.write((command + "\n").getBytes(StandardCharsets.US_ASCII));
    in.flush();
    String line = stdout.readLine();
    if (line == null || !line.startsWith(command + " ")) {
      throw new IOException("demo server answered " + line + " to " + command);
    }
    return Long.parseLong(line.substring(command.length() + 1).trim());
  }

  @Override
  public void close() throws IOException {
    process.getOutputStream().close();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
