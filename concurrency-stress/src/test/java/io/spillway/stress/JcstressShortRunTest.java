package io.spillway.stress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Runs every jcstress test of this module once, in one JVM configuration (jcstress's {@code quick}
 * preset, no per-actor split compilation, no extra JVM flag sets), and fails on any forbidden
 * outcome or error. jcstress forks its own JVMs with this JVM's class path. The full matrix of
 * compilation modes and stress flags is {@code ./spillway jcstress -m quick} (or {@code default},
 * {@code tough}); docs/results/reliability.md records a run and what it catches.
 */
class JcstressShortRunTest {

  /** What jcstress's progress line says at the end: planned, passed, failed, soft and hard errors. */
  private static final Pattern RESULTS = Pattern.compile(
      "Results: (\\d+) planned; (\\d+) passed, (\\d+) failed, (\\d+) soft errs, (\\d+) hard errs");

  /** The test classes in this module's jcstress test list, written by jcstress's processor. */
  private static final int TESTS = 13;

  @Test
  void everyStressTestSeesOnlyAcceptableOutcomes() throws IOException, InterruptedException {
    // every test runs two actors at once; jcstress does not run a test on fewer CPUs than actors
    assumeTrue(Runtime.getRuntime().availableProcessors() >= 2,
        "jcstress needs two CPUs for two actors; this machine has one");
    Path target = Path.of("target").toAbsolutePath();
    Path reports = target.resolve("jcstress-results");
    Path log = target.resolve("jcstress-short-run.txt");
    Files.createDirectories(reports);
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"),
        "org.openjdk.jcstress.Main",
        "-t", "io\\.spillway\\..*",
        "-m", "quick",
        "-sc", "false",
        "-jvmArgs", "--enable-native-access=ALL-UNNAMED",
        "-r", reports.toString()));
    Process process = new ProcessBuilder(command)
        .directory(target.toFile()) // jcstress writes its binary results to the working directory
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
    int exit = process.waitFor();
    String output = Files.readString(log, StandardCharsets.UTF_8);

    Matcher m = RESULTS.matcher(output);
    String last = null;
    while (m.find()) {
      last = m.group();
    }
    assertTrue(last != null, "jcstress printed no results line; its output is in " + log);
    Matcher result = RESULTS.matcher(last);
    assertTrue(result.matches());
    int planned = Integer.parseInt(result.group(1));
    int passed = Integer.parseInt(result.group(2));
    assertEquals(TESTS, planned, "tests run, in " + log + ": " + last);
    assertEquals(planned, passed, "jcstress found a forbidden outcome or an error; report in "
        + reports + ", output in " + log + ": " + last);
    assertEquals(0, exit, "jcstress exited " + exit + "; output in " + log);
  }
}
