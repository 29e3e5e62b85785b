package io.spillway.harness;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.sim.Scenario;
import io.spillway.sim.SchemeRegistry;
import io.spillway.transport.RequestHandler;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.Threading;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import jdk.jfr.Recording;

/**
 * The harness's server process: a {@link SpillwayServer} running one scheme over a synthetic
 * service, the way the papers' synthetic workloads model a CPU-bound request.
 *
 * <ul>
 *   <li>Without {@code paths}: each request spins for the service time it carries (8 bytes,
 *       nanoseconds), inline on the event loop or on the Loom carrier-delay dispatcher (scenario key
 *       {@code threading}).
 *   <li>With {@code paths} (Protego's two-path experiment, protego-nsdi23 §2, Fig. 1): the {@link
 *       MutexPathService}, whose requests hold a path's {@link io.spillway.asqm.BudgetedLock} while
 *       they spin. It needs {@code threading = dispatch}: a request waiting for a mutex parks its
 *       virtual thread and frees the carrier, as Protego's threads free their core, so the carrier
 *       queue (Breakwater's signal) does not see the lock queues. Under a scheme with ASQM the
 *       transport gives each request the scenario's queueing budget ({@link
 *       Scenario#asqmBudgetNanos()}, §3.2) and the service acquires within it.
 * </ul>
 *
 * <p>Prints {@code SPILLWAY-PORT n} on stdout once listening, then serves until its standard input
 * closes (so it never outlives the harness). Lines on standard input are commands: {@code
 * jfr-start} starts a Flight Recorder recording of lock waits (every {@code jdk.ThreadPark} and
 * {@code jdk.JavaMonitorEnter}, with stacks, as {@link io.spillway.asqm.ContendedLockFinder} reads
 * them) and {@code jfr-stop FILE} stops it and writes it to FILE; each is answered by a line
 * starting {@code SPILLWAY-JFR}. {@code gc-samples} answers (on the same prefix) with the heap in use
 * after every collection since the last such command, {@code UPTIME_MS:BYTES} comma-separated, from
 * the collectors' notifications ({@link GcSamples}; the soak reads them); {@code jit} with the ms
 * its JIT has compiled since it started, -1 if the JVM does not say (capacity readings wait for it
 * to go quiet, {@link SteadyCapacity}). JFR records lock waits of platform threads only; the
 * harness samples the virtual threads' waits from thread dumps of this process meanwhile
 * ({@code HarnessMain}'s {@code --profile-locks}).
 *
 * <p>Usage: {@code HarnessServer SCENARIO_FILE SCHEME CARRIERS [key=value ...]}
 */
public final class HarnessServer {

  static final String PORT_LINE = "SPILLWAY-PORT ";
  static final String JFR_LINE = "SPILLWAY-JFR ";

  /**
   * Standard output as the process started: the harness reads its lines. Everything else printed
   * to {@code System.out} goes to the server's log instead (Sentinel announces its log settings
   * on standard output when it starts).
   */
  private static final PrintStream PROTOCOL = System.out;

  private HarnessServer() { }

  public static void main(String[] args) throws Exception {
    quietStdout();
    if (args.length < 3) {
      System.err.println("usage: HarnessServer SCENARIO_FILE SCHEME CARRIERS [key=value ...]");
      System.exit(2);
    }
    Map<String, String> overrides = new LinkedHashMap<>();
    for (int i = 3; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      overrides.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Scenario scenario = Scenario.load(Path.of(args[0]), overrides);
    String schemeName = args[1];
    int carriers = Integer.parseInt(args[2]);
    Ticker ticker = Ticker.system();
    RequestHandler handler = handler(scenario, schemeName, ticker);
    Decisions decisions = new Decisions();
    try (CarrierDispatcher dispatcher = CarrierDispatcher.create(carriers, ticker);
         SpillwayServer server = builder(scenario, schemeName, handler, dispatcher, carriers)
             .ticker(ticker).metrics(decisions).build().start()) {
      System.err.println("harness server: scheme " + schemeName + ", transport " + server.transport()
          + ", threading " + scenario.threading() + (server.threading() == Threading.LOOP_QUEUE ? "" : ", " + dispatcher)
          + (handler instanceof MutexPathService s ? ", " + s : "")
          + (usesAsqm(schemeName) ? ", ASQM budget " + scenario.asqmBudgetNanos() / 1_000 + " us" : ""));
      GcSamples.start();
      announce(server.port());
      serveCommands(command -> null);
      System.err.println("harness server: the gate's decisions over its life: " + decisions);
    }
  }

  /**
   * The gate's decisions by status and how the admitted requests ended, counted for the server's
   * log: a request can be admitted and still end without running (its budget spent in the queue).
   * Thread-safe.
   */
  private static final class Decisions implements OverloadMetrics {
    private final LongAdder[] byStatus = adders(Status.values().length);
    private final LongAdder[] byOutcome = adders(Outcome.values().length);

    private static LongAdder[] adders(int n) {
      LongAdder[] a = new LongAdder[n];
      Arrays.setAll(a, i -> new LongAdder());
      return a;
    }

    @Override
    public void onAdmission(Status decision) {
      byStatus[decision.ordinal()].increment();
    }

    @Override
    public void onCompletion(Outcome outcome) {
      byOutcome[outcome.ordinal()].increment();
    }

    @Override
    public String toString() {
      return count(Status.values(), byStatus) + "; ended: "
          + count(Outcome.values(), byOutcome);
    }

    private static String count(Enum<?>[] keys, LongAdder[] counts) {
      StringBuilder out = new StringBuilder();
      for (Enum<?> k : keys) {
        long n = counts[k.ordinal()].sum();
        if (n > 0) {
          out.append(out.isEmpty() ? "" : ", ").append(k).append('=').append(n);
        }
      }
      return out.isEmpty() ? "none" : out.toString();
    }
  }

  /**
   * Sends everything printed to {@code System.out} from now on to standard error, keeping standard
   * output for the protocol ({@link #PROTOCOL}, taken when this class is initialised, which calling
   * this does first). A server's main calls it before anything else prints.
   */
  static void quietStdout() {
    System.setOut(System.err);
  }

  /** Tells the harness the port: the protocol's first line. */
  static void announce(int port) {
    PROTOCOL.println(PORT_LINE + port);
    PROTOCOL.flush();
  }

  /** Schemes under which requests get a queueing budget and acquire within it: the simulator's rule. */
  static boolean usesAsqm(String scheme) {
    return SchemeRegistry.usesAsqm(scheme);
  }

  /** The scenario's synthetic service: the mutex-path service if it has {@code paths}, else a spin. */
  static RequestHandler handler(Scenario scenario, String scheme, Ticker ticker) {
    if (scenario.paths().length == 0) {
      return HarnessServer::spin;
    }
    if (scenario.threading().equals("inline")) {
      throw new IllegalArgumentException("scenario key 'paths' needs threading = dispatch: a request waiting"
          + " for a mutex must park its own thread, not the event loop");
    }
    return MutexPathService.forScenario(scenario, usesAsqm(scheme), ticker);
  }

  /**
   * A server for {@code scheme} running {@code handler}: inline on the event loop or on {@code
   * dispatcher}, as the scenario's {@code threading} says, with the scenario's ASQM budget if the
   * scheme uses ASQM.
   */
  static SpillwayServer.Builder builder(Scenario scenario, String scheme, RequestHandler handler,
      CarrierDispatcher dispatcher, int parallelism) {
    OverloadScheme overload = SocketSchemes.create(scheme, scenario);
    SpillwayServer.Builder b = scenario.threading().equals("inline")
        ? SpillwayServer.builder().threading(Threading.LOOP_QUEUE)
        : SpillwayServer.builder().dispatcher(dispatcher, dispatcher.queueDelay());
    if (usesAsqm(scheme)) {
      b.queueingBudgetNanos(scenario.asqmBudgetNanos());
    }
    return b.scheme(overload).parallelism(parallelism).handler(handler);
  }

  /**
   * Reads commands from standard input until it closes: the class comment's, and any that {@code
   * more} answers (it returns null for a command it does not know).
   */
  static void serveCommands(Function<String, String> more) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Recording recording = null;
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      String command = line.strip();
      if (command.equals("jfr-start") && recording == null) {
        recording = new Recording();
        recording.setName("spillway-lock-waits");
        recording.enable("jdk.ThreadPark").withThreshold(Duration.ZERO).withStackTrace();
        recording.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ZERO).withStackTrace();
        recording.start();
        reply("started");
      } else if (command.startsWith("jfr-stop ") && recording != null) {
        Path file = Path.of(command.substring("jfr-stop ".length()).strip());
        recording.stop();
        recording.dump(file);
        recording.close();
        recording = null;
        reply(file.toString());
      } else if (command.equals("gc-samples")) {
        reply(GcSamples.drain());
      } else if (command.equals("jit")) {
        reply(Long.toString(compileMillis()));
      } else {
        String answer = more.apply(command);
        reply(answer != null ? answer : "error: unknown or out-of-order command '" + command + "'");
      }
    }
  }

  /** The time this JVM's JIT has spent compiling since it started, ms; -1 if the JVM does not say. */
  private static long compileMillis() {
    return SteadyCapacity.ownJitMillis();
  }

  private static void reply(String text) {
    PROTOCOL.println(JFR_LINE + text);
    PROTOCOL.flush();
  }

  /** The synthetic service without paths: spin for the requested time on the carrier. */
  static ByteBuf spin(ByteBuf request, ByteBufAllocator alloc) {
    long nanos = request.readableBytes() >= 8 ? request.getLong(request.readerIndex()) : 0;
    long end = System.nanoTime() + nanos;
    while (System.nanoTime() - end < 0) {
      Thread.onSpinWait();
    }
    return Unpooled.EMPTY_BUFFER;
  }
}
