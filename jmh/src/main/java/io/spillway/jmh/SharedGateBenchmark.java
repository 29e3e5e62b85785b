package io.spillway.jmh;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * One gate shared by every benchmark thread, as a server's event loops or handler threads share
 * it: admit plus completion per op, each thread serving its own sessions (a session belongs to one
 * connection, and a connection to one loop), so the threads meet only in the gate's shared state
 * — Breakwater's C_issued and pool (breakwater-osdi20 §3.2), the default scheme's residence
 * reading, a semaphore's permits, a limiter's in-flight count. Run with {@code -t 1} and {@code
 * -t 2}: throughput that does not double is what the shared state costs.
 *
 * <p>The gates are made and warmed as in {@link CreditGateBenchmark} ({@link WarmedGates}: the
 * pools grown so every request admits; a refusal fails the trial). Each thread advances its own time counter at the
 * same pace, from the same start, so the gate sees the threads' times interleave as a host's clock
 * reads do, without a shared counter that would itself be contended. The peers in the same run:
 * Netflix concurrency-limits' {@code SimpleLimiter} with {@code Gradient2Limit.newDefault()}
 * (which reads the clock itself), and a Resilience4j bulkhead ({@code Bulkhead.ofDefaults}).
 *
 * <p>Run: {@code ./spillway jmh SharedGateBenchmark -t 1} and {@code -t 2}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class SharedGateBenchmark {

  /** The gates, shared by every thread ({@link WarmedGates}), and the peers'. */
  @State(Scope.Benchmark)
  public static class Gates {
    @Param({"100", "10000"})
    int sessions;

    ServerGate breakwater;
    ServerGate spillway;
    ServerGate none;
    final Semaphore semaphore = new Semaphore(1_000_000);
    final SimpleLimiter<Object> netflix =
        SimpleLimiter.newBuilder().limit(Gradient2Limit.newDefault()).build();
    final Bulkhead bulkhead = Bulkhead.ofDefaults("spillway-jmh");
    long now;

    @Setup(Level.Trial)
    public void setUp() {
      WarmedGates gates = new WarmedGates(sessions);
      breakwater = gates.breakwater;
      spillway = gates.spillway;
      none = gates.none;
      now = gates.now;
    }
  }

  /** One thread's sessions, time and counts. */
  @State(Scope.Thread)
  public static class Caller {
    final RequestMetadata request = new RequestMetadata();
    final ResponseMetadata response = new ResponseMetadata();
    long now;
    private int first;
    private int stride;
    private int sessions;
    private long next;
    long refused;

    @Setup(Level.Trial)
    public void setUp(Gates gates, ThreadParams thread) {
      now = gates.now;
      first = thread.getThreadIndex() + 1;
      stride = thread.getThreadCount();
      sessions = gates.sessions;
      next = first;
    }

    /** This thread's sessions in turn: first, first + stride, ... up to the session count. */
    long nextSession() {
      long s = next;
      next = s + stride > sessions ? first : s + stride;
      return s;
    }

    void count(boolean admitted) {
      if (!admitted) {
        refused++;
      }
    }

    @TearDown(Level.Trial)
    public void everyRequestAdmitted() {
      if (refused != 0) {
        throw new IllegalStateException(refused + " request(s) refused on one thread; every row"
            + " must time the admitting path only");
      }
    }
  }

  @Benchmark
  public int breakwaterAdmitAndComplete(Gates gates, Caller c) {
    c.request.reset().sessionId(c.nextSession()).demand(2);
    ServerPermit permit = gates.breakwater.admit(c.request, ++c.now);
    c.count(permit.isAdmitted());
    permit.complete(Outcome.SUCCESS, ++c.now, c.response.reset());
    return c.response.creditDelta();
  }

  @Benchmark
  public int spillwayAdmitStartAndComplete(Gates gates, Caller c) {
    c.request.reset().sessionId(c.nextSession()).demand(2);
    ServerPermit permit = gates.spillway.admit(c.request, ++c.now);
    c.count(permit.isAdmitted());
    permit.started(++c.now);
    permit.complete(Outcome.SUCCESS, ++c.now, c.response.reset());
    return c.response.creditDelta();
  }

  @Benchmark
  public int noControlAdmitAndComplete(Gates gates, Caller c) {
    c.request.reset().sessionId(c.nextSession()).demand(2);
    ServerPermit permit = gates.none.admit(c.request, ++c.now);
    c.count(permit.isAdmitted());
    permit.complete(Outcome.SUCCESS, ++c.now, c.response.reset());
    return c.response.creditDelta();
  }

  @Benchmark
  public boolean semaphoreAcquireAndRelease(Gates gates, Caller c) {
    boolean ok = gates.semaphore.tryAcquire();
    c.count(ok);
    if (ok) {
      gates.semaphore.release();
    }
    return ok;
  }

  @Benchmark
  public boolean netflixGradient2(Gates gates, Caller c) {
    Optional<Limiter.Listener> listener = gates.netflix.acquire(null);
    c.count(listener.isPresent());
    listener.ifPresent(Limiter.Listener::onSuccess);
    return listener.isPresent();
  }

  @Benchmark
  public boolean resilience4jBulkhead(Gates gates, Caller c) {
    boolean ok = gates.bulkhead.tryAcquirePermission();
    c.count(ok);
    if (ok) {
      gates.bulkhead.onComplete();
    }
    return ok;
  }
}
