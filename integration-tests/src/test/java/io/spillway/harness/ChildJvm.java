package io.spillway.harness;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A second JVM on the test's class path, for the faults that need a real process: killed with
 * SIGKILL, stopped with SIGSTOP. Its standard output is read line by line; its standard error goes
 * to the test's. Closing it closes its standard input (the child mains exit on that) and waits.
 * Not thread-safe.
 */
final class ChildJvm implements AutoCloseable {

  private final Process process;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final Writer stdin;

  private ChildJvm(Process process) {
    this.process = process;
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    Thread.ofPlatform().daemon().name("child-" + process.pid()).start(() -> {
      try (BufferedReader out = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
          lines.add(line);
        }
      } catch (IOException closed) {
        // the child died; its lines so far are kept
      }
    });
  }

  /** Starts {@code mainClass} with {@code args}, Netty's leak detector at PARANOID, a 256 MB heap. */
  static ChildJvm start(Class<?> mainClass, String... args) throws IOException {
    String java = ProcessHandle.current().info().command().orElse("java");
    List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseParallelGC",
        "--enable-native-access=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
        "-Dio.netty.leakDetection.level=paranoid",
        "-cp", System.getProperty("java.class.path"), mainClass.getName()));
    command.addAll(List.of(args));
    return new ChildJvm(new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start());
  }

  long pid() {
    return process.pid();
  }

  /** The next line that starts with {@code prefix}, skipping others; fails after {@code seconds}. */
  String awaitLine(String prefix, long seconds) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (true) {
      long left = deadline - System.nanoTime();
      String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
      if (line == null) {
        throw new AssertionError("child " + pid() + " printed no '" + prefix + "' line in "
            + seconds + " s (alive: " + process.isAlive() + ")");
      }
      if (line.startsWith(prefix)) {
        return line.substring(prefix.length()).strip();
      }
    }
  }

  void send(String line) throws IOException {
    stdin.write(line + "\n");
    stdin.flush();
  }

  /** SIGKILL, and waits until the process is gone. */
  void kill9() throws InterruptedException {
    process.destroyForcibly(); // SIGKILL on Linux
    process.waitFor();
  }

  void signal(String name) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid())).inheritIO().start();
    if (kill.waitFor() != 0) {
      throw new IOException("kill -" + name + " " + pid() + " failed");
    }
  }

  @Override
  public void close() throws InterruptedException {
    try {
      stdin.close();
    } catch (IOException gone) {
      // already dead
    }
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor();
    }
  }
}
