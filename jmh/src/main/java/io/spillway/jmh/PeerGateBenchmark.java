package io.spillway.jmh;

import com.alibaba.csp.sentinel.AsyncEntry;
import com.alibaba.csp.sentinel.Constants;
import com.alibaba.csp.sentinel.Entry;
import com.alibaba.csp.sentinel.EntryType;
import com.alibaba.csp.sentinel.SphU;
import com.alibaba.csp.sentinel.node.ClusterNode;
import com.alibaba.csp.sentinel.slots.block.BlockException;
import com.alibaba.csp.sentinel.slots.block.RuleConstant;
import com.alibaba.csp.sentinel.slots.block.flow.FlowRule;
import com.alibaba.csp.sentinel.slots.block.flow.FlowRuleManager;
import com.alibaba.csp.sentinel.slots.clusterbuilder.ClusterBuilderSlot;
import com.alibaba.csp.sentinel.slots.system.SystemRule;
import com.alibaba.csp.sentinel.slots.system.SystemRuleManager;
import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.spillway.api.Cancellable;
import io.spillway.api.ControlChannel;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.peers.Gradient2Config;
import io.spillway.peers.NetflixConcurrencyLimit;
import io.spillway.peers.SentinelSystemConfig;
import io.spillway.peers.SentinelSystemProtection;
import io.spillway.peers.VegasConfig;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The Java peers users pick today, one request's admission and completion each, measured in the
 * same run as {@link CreditGateBenchmark}'s Spillway gates (Breakwater, the default {@code
 * spillway} scheme) and its baselines ({@code NoControl}'s gate, a {@code Semaphore}). Like those
 * rows, every state here is per thread ({@link Scope#Thread}) and one thread runs the benchmark,
 * so a permit is always free and only the admission path's own cost is timed; contention is the
 * transport benchmarks' business.
 *
 * <ul>
 *   <li>{@code netflixGradient2} / {@code netflixVegas}: Netflix concurrency-limits 0.5.4's {@link
 *       SimpleLimiter}, {@code acquire(context)} then {@code onSuccess()} on the listener. Gradient2
 *       is {@link Gradient2Limit#newDefault()}; Vegas is the limiter builder's own default limit
 *       ({@code VegasLimit.newDefault()}, probing on). The README's server example also wraps the
 *       limit in a {@code WindowedLimit}; its default ignores every sample under 100 µs, which here
 *       is all of them, so that row would time an empty sample path and is left out.
 *   <li>{@code spillwayNetflixGradient2} / {@code spillwayNetflixVegas}: the same algorithms behind
 *       Spillway's SPI ({@link NetflixConcurrencyLimit} with the library builder's defaults, {@link
 *       Gradient2Config#defaults()} and {@link VegasConfig#defaults()}, whose Vegas does not probe),
 *       admit then complete with {@link Outcome#SUCCESS}, as the Spillway rows do. The gate is
 *       overload-peers' copy of the limiter's enforcement (a CAS on the in-flight count, no
 *       semaphore, no {@code Optional}), taking the host's time.
 *   <li>{@code sentinelEntryExit}: Sentinel 1.8.9 as its README shows it, {@code
 *       SphU.entry(resource)} and {@code entry.exit()}, with one QPS flow rule on the resource whose
 *       count ({@link Integer#MAX_VALUE}) this thread cannot reach: the whole slot chain runs, the
 *       flow check included, and nothing is blocked.
 *   <li>{@code sentinelAsyncEntrySystemRule}: what Spillway's wrapper calls, {@code
 *       SphU.asyncEntry(resource, EntryType.IN)} and {@code exit()}, under the system rule the
 *       wrapper loads ({@link SentinelSystemConfig#defaults()}: load1 above 2.5 × cores arms a BBR
 *       check that refuses only with more than one entry in flight, so one thread is never refused).
 *   <li>{@code spillwaySentinel}: that rule behind Spillway's SPI ({@link
 *       SentinelSystemProtection#defaults()}'s gate), admit then complete.
 *   <li>{@code resilience4jBulkhead}: Resilience4j 2.4.0's semaphore {@link Bulkhead} with its
 *       default config (25 concurrent calls, no wait, fair), {@code tryAcquirePermission()} then
 *       {@code onComplete()}.
 *   <li>{@code clockReadTwice}: two {@link System#nanoTime()} reads, what the Netflix limiter pays
 *       for its sample besides the algorithm; a baseline for reading the peers' rows.
 * </ul>
 *
 * <p><b>Clocks are part of the peers' cost.</b> Spillway's gates (and the {@code spillway*} rows
 * here, wrapped peers included) take the time from the caller, and the benchmarks hand them a
 * counter, as a host hands them the time it has already read for the request. The raw peers read
 * the real clock themselves, as they do in production: Netflix's limiter calls {@code
 * System.nanoTime()} at acquire and again at completion; Sentinel reads its own millisecond clock
 * ({@code TimeUtil}: {@code System.currentTimeMillis()} at low rates, a volatile refreshed every
 * millisecond by its {@code sentinel-time-tick-thread} once it sees more than 1,200 reads a second,
 * each read counted in a {@code LongAdder}) at entry and at exit, some 16–26 times a request, for
 * its statistics windows and response times, in the wrapped rows too. Resilience4j's bulkhead reads no clock on this path (a
 * zero wait is a {@code Semaphore.tryAcquire(0, ms)} that succeeds at once). Sentinel also runs its
 * tick, system-status and metric-log threads in its forks; they belong to its cost as deployed.
 * Its rows warm up longer ({@link #SENTINEL_WARMUP_ITERATIONS}), so they time that clock's cached
 * mode, the one a loaded server runs in.
 *
 * <p>Same forks (one, 1 GB heap), warm-up and measurement as {@link CreditGateBenchmark}'s, but for
 * Sentinel's longer warm-up (below).
 *
 * <p><b>Every measured operation must admit.</b> Each state counts refusals, and its trial tear-down
 * throws if any request was refused (or a library still holds a permit afterwards), so a row can
 * never time a reject path and still report a number. Each peer's state is its own, so a fork sets
 * up only the library it measures (JMH forks per benchmark): Sentinel's static state and threads
 * never run in another row's fork.
 *
 * <p>Run, with the Spillway rows in the same run: {@code ./spillway jmh
 * '(CreditGate|PeerGate)Benchmark' -prof gc} (no {@code -wi}: it would override Sentinel's longer
 * warm-up). Results: docs/results/jmh.md, "Spillway's gates against the peers".
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class PeerGateBenchmark {

  /**
   * Sentinel's rows warm up for 6 s, not 3: its clock ({@code TimeUtil}) starts idle, reading
   * {@code System.currentTimeMillis()} on every one of its reads (about 16 for an entry and its
   * exit, 26 for an async entry, from the rates its record log gives), and moves to its cached
   * millisecond only at its first check, 3 s after it starts; the warm-up must end after that, or
   * the first iterations time the idle clock (1.2–2.2 µs per request on this machine instead of
   * 0.5–0.8). A server above 1,200 clock reads a second (under a hundred requests a second) runs
   * in the cached mode.
   */
  static final int SENTINEL_WARMUP_ITERATIONS = 6;

  /** The resource every Sentinel row enters (the wrapper has its own). */
  static final String RESOURCE = "spillway-jmh";

  /**
   * Refusals seen by one row; a trial that saw one fails. Subclasses add what else must hold once
   * the trial is over (every permit returned).
   */
  public abstract static class Admissions {
    long refused;

    final void count(boolean admitted) {
      if (!admitted) {
        refused++;
      }
    }

    /** What is wrong once every request has completed, or null. */
    String leftOver() {
      return null;
    }

    @TearDown(Level.Trial)
    public void everyRequestAdmitted() {
      String what = getClass().getSimpleName();
      if (refused != 0) {
        throw new IllegalStateException(what + ": " + refused + " request(s) refused; this row must"
            + " time the admitting path only");
      }
      String left = leftOver();
      if (left != null) {
        throw new IllegalStateException(what + ": " + left);
      }
    }
  }

  /** Netflix concurrency-limits' {@link SimpleLimiter} with the default Gradient2 limit. */
  @State(Scope.Thread)
  public static class NetflixGradient2 extends Admissions {
    final SimpleLimiter<Object> limiter =
        SimpleLimiter.newBuilder().limit(Gradient2Limit.newDefault()).build();

    @Override
    String leftOver() {
      return limiter.getInflight() == 0 ? null : limiter.getInflight() + " still in flight";
    }
  }

  /** Netflix concurrency-limits' {@link SimpleLimiter} as built: its default limit is Vegas. */
  @State(Scope.Thread)
  public static class NetflixVegas extends Admissions {
    final SimpleLimiter<Object> limiter = SimpleLimiter.newBuilder().build();

    @Override
    String leftOver() {
      return limiter.getInflight() == 0 ? null : limiter.getInflight() + " still in flight";
    }
  }

  /** A Spillway gate of overload-peers' scheme, fed a counter for time, as the Spillway rows are. */
  public abstract static class SpillwayWrapped extends Admissions {
    final RequestMetadata request = new RequestMetadata();
    final ResponseMetadata response = new ResponseMetadata();
    long now;
    ServerGate gate;

    abstract OverloadScheme scheme();

    @Setup(Level.Trial)
    public void openGate() {
      Scheduler idle = (task, delay) -> (Cancellable) () -> { };
      ServerEnvironment env = new ServerEnvironment(() -> now, idle, t -> 0L, ControlChannel.DISCARD,
          OverloadMetrics.NONE, 10);
      gate = scheme().newServerGate(env);
    }

    @TearDown(Level.Trial)
    public void closeGate() {
      gate.close();
    }
  }

  @State(Scope.Thread)
  public static class SpillwayNetflixGradient2 extends SpillwayWrapped {
    @Override
    OverloadScheme scheme() {
      return NetflixConcurrencyLimit.of(Gradient2Config.defaults());
    }
  }

  @State(Scope.Thread)
  public static class SpillwayNetflixVegas extends SpillwayWrapped {
    @Override
    OverloadScheme scheme() {
      return NetflixConcurrencyLimit.of(VegasConfig.defaults());
    }
  }

  @State(Scope.Thread)
  public static class SpillwaySentinel extends SpillwayWrapped {
    @Override
    OverloadScheme scheme() {
      sentinelLogsAside();
      return SentinelSystemProtection.defaults();
    }

    @Override
    String leftOver() {
      // overload-peers' SentinelServerGate.RESOURCE (package-private)
      return sentinelLeftOver("spillway-inbound");
    }
  }

  /** Sentinel with one QPS flow rule on {@link #RESOURCE} that this thread cannot reach. */
  @State(Scope.Thread)
  public static class SentinelFlowRule extends Admissions {
    @Setup(Level.Trial)
    public void loadRule() {
      sentinelLogsAside();
      FlowRule rule = new FlowRule(RESOURCE).setGrade(RuleConstant.FLOW_GRADE_QPS);
      rule.setCount(Integer.MAX_VALUE);
      FlowRuleManager.loadRules(List.of(rule));
    }

    @Override
    String leftOver() {
      return sentinelLeftOver(RESOURCE);
    }
  }

  /** Sentinel with the system rule Spillway's wrapper loads, entered as the wrapper enters it. */
  @State(Scope.Thread)
  public static class SentinelSystemRule extends Admissions {
    @Setup(Level.Trial)
    public void loadRule() {
      sentinelLogsAside();
      SentinelSystemConfig config = SentinelSystemConfig.defaults();
      SystemRule rule = new SystemRule();
      rule.setHighestSystemLoad(config.highestSystemLoad());
      rule.setHighestCpuUsage(config.highestCpuUsage());
      SystemRuleManager.loadRules(List.of(rule));
    }

    @Override
    String leftOver() {
      return sentinelLeftOver(RESOURCE);
    }
  }

  /** Resilience4j's semaphore bulkhead with its default config. */
  @State(Scope.Thread)
  public static class Resilience4jBulkhead extends Admissions {
    final Bulkhead bulkhead = Bulkhead.ofDefaults("spillway-jmh");

    @Override
    String leftOver() {
      int free = bulkhead.getMetrics().getAvailableConcurrentCalls();
      int max = bulkhead.getMetrics().getMaxAllowedConcurrentCalls();
      return free == max ? null : (max - free) + " permit(s) not returned";
    }
  }

  /** Sentinel writes its logs under ~/logs/csp unless told otherwise: keep them out of home. */
  static void sentinelLogsAside() {
    if (System.getProperty("csp.sentinel.log.dir") == null) {
      System.setProperty("csp.sentinel.log.dir",
          Path.of(System.getProperty("java.io.tmpdir"), "spillway-jmh-sentinel-logs").toString());
    }
  }

  /** Entries of {@code resource} Sentinel still counts in flight, or null at none. */
  static String sentinelLeftOver(String resource) {
    ClusterNode node = ClusterBuilderSlot.getClusterNode(resource);
    if (node == null) {
      return "Sentinel never entered " + resource;
    }
    int inFlight = node.curThreadNum() + Constants.ENTRY_NODE.curThreadNum();
    return inFlight == 0 ? null : inFlight + " Sentinel entr(y/ies) of " + resource + " not exited";
  }

  private static final Object CONTEXT = new Object();

  @Benchmark
  public Object netflixGradient2(NetflixGradient2 s) {
    Optional<Limiter.Listener> listener = s.limiter.acquire(CONTEXT);
    s.count(listener.isPresent());
    listener.ifPresent(Limiter.Listener::onSuccess);
    return listener;
  }

  @Benchmark
  public Object netflixVegas(NetflixVegas s) {
    Optional<Limiter.Listener> listener = s.limiter.acquire(CONTEXT);
    s.count(listener.isPresent());
    listener.ifPresent(Limiter.Listener::onSuccess);
    return listener;
  }

  @Benchmark
  public int spillwayNetflixGradient2(SpillwayNetflixGradient2 s) {
    return admitAndComplete(s);
  }

  @Benchmark
  public int spillwayNetflixVegas(SpillwayNetflixVegas s) {
    return admitAndComplete(s);
  }

  @Benchmark
  @Warmup(iterations = SENTINEL_WARMUP_ITERATIONS, time = 1)
  public int spillwaySentinel(SpillwaySentinel s) {
    return admitAndComplete(s);
  }

  /** As {@code CreditGateBenchmark.noControlAdmitAndComplete}, on the wrapped peer's gate. */
  private static int admitAndComplete(SpillwayWrapped s) {
    s.request.reset().sessionId(1).demand(2);
    ServerPermit permit = s.gate.admit(s.request, ++s.now);
    s.count(permit.isAdmitted());
    permit.complete(Outcome.SUCCESS, ++s.now, s.response.reset());
    return s.response.creditDelta();
  }

  @Benchmark
  @Warmup(iterations = SENTINEL_WARMUP_ITERATIONS, time = 1)
  public Object sentinelEntryExit(SentinelFlowRule s) {
    Entry entry;
    try {
      entry = SphU.entry(RESOURCE);
    } catch (BlockException e) {
      s.count(false);
      return e;
    }
    entry.exit();
    return entry;
  }

  @Benchmark
  @Warmup(iterations = SENTINEL_WARMUP_ITERATIONS, time = 1)
  public Object sentinelAsyncEntrySystemRule(SentinelSystemRule s) {
    AsyncEntry entry;
    try {
      entry = SphU.asyncEntry(RESOURCE, EntryType.IN);
    } catch (BlockException e) {
      s.count(false);
      return e;
    }
    entry.exit();
    return entry;
  }

  @Benchmark
  public boolean resilience4jBulkhead(Resilience4jBulkhead s) {
    boolean permitted = s.bulkhead.tryAcquirePermission();
    s.count(permitted);
    if (permitted) {
      s.bulkhead.onComplete();
    }
    return permitted;
  }

  @Benchmark
  public long clockReadTwice() {
    long start = System.nanoTime();
    return System.nanoTime() - start;
  }
}
