package io.spillway.jmh;

import io.spillway.api.NoControl;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.credit.Spillway;
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

/**
 * The server credit gate's cost per request, admit plus completion (which computes the piggybacked
 * credit, eq. 4–6), at 100 and 10,000 registered sessions: the cost must not grow with the number
 * of sessions (no scan over clients, Breakwater §4 "Lazy credit distribution"). Requests rotate
 * over all sessions, so every call touches a different session's state, as a server with many
 * clients does.
 *
 * <p>{@code spillwayAdmitStartAndComplete} is the default scheme's gate ({@link Spillway#forSloNanos})
 * for the same sessions, with the host's report that the handler has the request ({@link
 * ServerPermit#started}) between admit and completion, as the gRPC, native and HTTP hosts make it:
 * its permits then measure the handlers' residence for the queue's share of the SLO.
 *
 * <p>Baselines in the same run: {@link NoControl}'s gate (the SPI's floor: a permit allocation and
 * its exactly-once CAS) and a {@link Semaphore} tryAcquire/release (a static concurrency limit).
 * Time comes from a counter, not the clock, so only the gate is measured. The gates are made by
 * their schemes, as a user makes them; their control loops run on a scheduler the set-up drives by
 * hand, so no timer runs during the measurement. The peers users pick
 * today (Netflix concurrency-limits, Sentinel, a Resilience4j bulkhead), raw and behind the SPI,
 * are in {@link PeerGateBenchmark}, to be run in the same run as these rows.
 *
 * <p>Every measured operation must admit: refusals are counted, and the trial's tear-down fails if
 * there was one, so no row times a reject path unnoticed.
 *
 * <p>Run: {@code ./spillway jmh CreditGateBenchmark -prof gc}; with the peers: {@code ./spillway
 * jmh '(CreditGate|PeerGate)Benchmark' -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class CreditGateBenchmark {

  @Param({"100", "10000"})
  int sessions;

  private ServerGate breakwater;
  private ServerGate spillway;
  private ServerGate none;
  private final Semaphore semaphore = new Semaphore(1_000_000);
  private final RequestMetadata request = new RequestMetadata();
  private final ResponseMetadata response = new ResponseMetadata();
  private long now;
  private int next;
  private long refused;

  @Setup(Level.Trial)
  public void setUp() {
    WarmedGates gates = new WarmedGates(sessions);
    breakwater = gates.breakwater;
    spillway = gates.spillway;
    none = gates.none;
    now = gates.now;
  }

  @TearDown(Level.Trial)
  public void everyRequestAdmitted() {
    if (refused != 0) {
      throw new IllegalStateException(refused + " request(s) refused at " + sessions
          + " sessions; every row must time the admitting path only");
    }
  }

  private long nextSession() {
    int s = next + 1;
    next = s == sessions ? 0 : s;
    return s;
  }

  @Benchmark
  public int breakwaterAdmitAndComplete() {
    request.reset().sessionId(nextSession()).demand(2);
    ServerPermit permit = breakwater.admit(request, ++now);
    count(permit.isAdmitted());
    permit.complete(Outcome.SUCCESS, ++now, response.reset());
    return response.creditDelta();
  }

  @Benchmark
  public int spillwayAdmitStartAndComplete() {
    request.reset().sessionId(nextSession()).demand(2);
    ServerPermit permit = spillway.admit(request, ++now);
    count(permit.isAdmitted());
    permit.started(++now);
    permit.complete(Outcome.SUCCESS, ++now, response.reset());
    return response.creditDelta();
  }

  @Benchmark
  public int noControlAdmitAndComplete() {
    request.reset().sessionId(nextSession()).demand(2);
    ServerPermit permit = none.admit(request, ++now);
    count(permit.isAdmitted());
    permit.complete(Outcome.SUCCESS, ++now, response.reset());
    return response.creditDelta();
  }

  @Benchmark
  public boolean semaphoreAcquireAndRelease() {
    boolean ok = semaphore.tryAcquire();
    count(ok);
    if (ok) {
      semaphore.release();
    }
    return ok;
  }

  private void count(boolean admitted) {
    if (!admitted) {
      refused++;
    }
  }
}
