package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Cancellable;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.TimestampedQueue;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * Rajomon's control loop end to end in virtual time, with tokens and prices carried on every hop:
 * Poisson clients, a back end of 4 workers × 10 µs (400 k requests/s), 10 µs RTT, a 200 µs SLO;
 * optionally a front end in front of it that forwards each request's tokens (rajomon-nsdi25 §3.4,
 * Fig. 3). Deterministic for the seed; set {@code -Dspillway.seed=N} to explore another.
 */
class RajomonControlLoopTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;
  private static final long SLO = 200 * US;
  private static final long RTT = 10 * US;
  private static final double CAPACITY = 4e9 / (10 * US);

  private static long seed() {
    String s = System.getProperty("spillway.seed");
    return s == null || s.isBlank() ? 42 : Long.parseLong(s);
  }

  /** A request as the world tracks it. */
  private static final class Call {
    final Client client;
    final long issuedAt;

    Call(Client client, long issuedAt) {
      this.client = client;
      this.issuedAt = issuedAt;
    }
  }

  private final class Client {
    final RajomonClientGate<Call> gate;
    long wakeupAt = Long.MIN_VALUE;

    Client(long session) {
      gate = Rajomon.of(config).newClientGate(new ClientEnvironment(session, SLO, OverloadMetrics.NONE));
    }
  }

  /** A server: workers, a FIFO run queue whose age is the price signal, maybe a callee. */
  private final class Server {
    final TimestampedQueue<Runnable> runQueue = new TimestampedQueue<>();
    final RajomonServerGate gate;
    final long serviceNanos;
    final Server callee;
    int idle;
    /** Nothing this server runs finishes before this time, if set: a stall (a GC pause, a lost core). */
    long stalledUntil;
    boolean stalls;
    long admitted;
    long rejected;

    Server(int workers, long serviceNanos, Server callee) {
      this.idle = workers;
      this.serviceNanos = serviceNanos;
      this.callee = callee;
      this.gate = Rajomon.of(config).newServerGate(new ServerEnvironment(clock, clock, runQueue,
          ControlChannel.DISCARD, OverloadMetrics.NONE, workers));
      gate.start();
    }

    /** A request arrives; {@code reply} gets the response (after the return half RTT). */
    void receive(RequestMetadata header, Consumer<ResponseMetadata> reply) {
      ServerPermit permit = gate.admit(header, clock.read());
      if (!permit.isAdmitted()) {
        rejected++;
        ResponseMetadata reject = new ResponseMetadata();
        permit.complete(Outcome.DROPPED, clock.read(), reject);
        clock.schedule(() -> reply.accept(reject), RTT / 2);
        return;
      }
      admitted++;
      Runnable job = () -> serve(header, permit, reply);
      if (idle > 0) {
        idle--;
        job.run();
      } else {
        runQueue.offer(job, clock.read());
      }
    }

    private void serve(RequestMetadata header, ServerPermit permit,
        Consumer<ResponseMetadata> reply) {
      clock.schedule(() -> {
        Runnable next = runQueue.poll();
        if (next != null) {
          next.run();
        } else {
          idle++;
        }
        if (callee == null) {
          respond(permit, Outcome.SUCCESS, reply);
          return;
        }
        // The front end forwards the request's tokens unchanged (maximal aggregation, §3.4).
        RequestMetadata sub = new RequestMetadata().sessionId(header.sessionId())
            .tokens(header.tokens()).interfaceId(0);
        clock.schedule(() -> callee.receive(sub, answer -> {
          gate.onDownstreamResponse(0, 0, answer, clock.read());
          respond(permit, answer.status() == Status.OK ? Outcome.SUCCESS : Outcome.FAILED, reply);
        }), RTT / 2);
      }, stalls ? Math.max(serviceNanos, stalledUntil - clock.read()) : serviceNanos);
    }

    private void respond(ServerPermit permit, Outcome outcome,
        Consumer<ResponseMetadata> reply) {
      ResponseMetadata response = new ResponseMetadata();
      permit.complete(outcome, clock.read(), response);
      clock.schedule(() -> reply.accept(response), RTT / 2);
    }
  }

  /**
   * forSlo's threshold (SLO/4), with the single-server tuning of scenarios/breakwater-synthetic.conf
   * (updates every 12 µs, 10 tokens per θ of delay, 300 tokens refilled per update): forSlo's own
   * gain suits call graphs and is 500× too high here (goodput 0.75 of capacity at 2×).
   */
  private final RajomonConfig config = RajomonConfig.forSlo(SLO, RTT).toBuilder()
      .priceUpdateIntervalNanos(12 * US).priceIncrease(10, SLO / 4)
      .refill(TokenRefill.POISSON, 300, 12 * US).build();
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100 * MS);
  private SplittableRandom random = new SplittableRandom(seed());
  private final List<Client> clients = new ArrayList<>();
  private Server front;
  private Server back;
  private double ratePerNano;
  private Cancellable nextArrival;

  private long issued;
  private long served;
  private long good;
  private long failedDownstream;
  private long refusedAtClient;
  private long expired;
  private long rejected;

  private void build(int clientCount, boolean twoTiers) {
    back = new Server(4, 10 * US, null);
    front = twoTiers ? new Server(64, US, back) : back;
    for (int i = 0; i < clientCount; i++) {
      clients.add(new Client(i + 1));
    }
  }

  private void setRate(double perSecond) {
    if (nextArrival != null) {
      nextArrival.cancel();
    }
    ratePerNano = perSecond / 1e9;
    scheduleArrival();
  }

  private void scheduleArrival() {
    long gap = Math.max(1, Math.round(-Math.log(1 - random.nextDouble()) / ratePerNano));
    nextArrival = clock.schedule(() -> {
      issue(clients.get(random.nextInt(clients.size())));
      scheduleArrival();
    }, gap);
  }

  private void issue(Client c) {
    issued++;
    if (!c.gate.offer(new Call(c, clock.read()), clock.read())) {
      refusedAtClient++;
      return;
    }
    drain(c);
  }

  private void drain(Client c) {
    expired += c.gate.expire(clock.read(), call -> { });
    RequestMetadata header = new RequestMetadata();
    Call call;
    while ((call = c.gate.poll(clock.read(), header)) != null) {
      Call sent = call;
      RequestMetadata copy = new RequestMetadata().sessionId(header.sessionId())
          .tokens(header.tokens()).interfaceId(header.interfaceId());
      clock.schedule(() -> front.receive(copy, response -> receive(sent, response)), RTT / 2);
      header.reset();
    }
    if (c.gate.queued() > 0) {
      long at = c.gate.nextWakeupNanos();
      if (c.wakeupAt == Long.MIN_VALUE || at - c.wakeupAt < 0) {
        c.wakeupAt = at;
        clock.schedule(() -> {
          if (c.wakeupAt == at) {
            c.wakeupAt = Long.MIN_VALUE;
            drain(c);
          }
        }, Math.max(1, at - clock.read()));
      }
    }
  }

  private void receive(Call call, ResponseMetadata response) {
    call.client.gate.onResponse(response.interfaceId(0), 0, clock.read());
    if (response.status() == Status.OK) {
      served++;
      if (clock.read() - call.issuedAt <= SLO) {
        good++;
      }
    } else if (response.status() == Status.FAILED) {
      failedDownstream++;
    } else {
      rejected++;
    }
    drain(call.client);
  }

  private record Tally(long issued, long served, long good, long shed) { }

  private Tally tally() {
    return new Tally(issued, served, good, refusedAtClient + expired + rejected + failedDownstream);
  }

  private String describe() {
    return "issued=" + issued + " served=" + served + " good=" + good + " refusedAtClient="
        + refusedAtClient + " expired=" + expired + " rejected=" + rejected + " failedDownstream="
        + failedDownstream + " backPrice=" + back.gate.localPrice() + " frontTotal="
        + front.gate.totalPrice(0) + " backRejected=" + back.rejected;
  }

  @Test
  void atTwiceCapacityPricesHoldGoodputNearCapacityWithinTheSlo() {
    build(50, false);
    setRate(2 * CAPACITY);
    clock.advance(50 * MS); // converge
    Tally before = tally();
    clock.advance(100 * MS);
    Tally after = tally();
    double goodput = (after.good() - before.good()) / 0.1;
    double servedRate = (after.served() - before.served()) / 0.1;
    assertTrue(back.gate.localPrice() > 0, "overload has a price: " + describe());
    assertTrue(goodput >= 0.8 * CAPACITY, "goodput " + goodput + " of " + CAPACITY + ": " + describe());
    assertTrue(goodput >= 0.95 * servedRate, "what is served meets the SLO: " + describe());
  }

  @Test
  void afterTheOverloadThePriceFallsToZeroAndNothingIsShed() {
    build(50, false);
    setRate(3 * CAPACITY);
    clock.advance(100 * MS);
    setRate(0.5 * CAPACITY);
    clock.advance(100 * MS);
    Tally before = tally();
    clock.advance(50 * MS);
    Tally after = tally();
    assertEquals(0, back.gate.localPrice(), describe());
    assertEquals(0, after.shed() - before.shed(), "nothing shed at half capacity: " + describe());
    assertTrue(after.issued() - before.issued() > 5_000, describe());
  }

  @Test
  void aBackEndPriceReachesTheFrontEndAndLoadIsShedBeforeTheBackEnd() {
    build(50, true);
    setRate(2 * CAPACITY);
    clock.advance(50 * MS);
    long backRejectedBefore = back.rejected;
    long frontRejectedBefore = front.rejected;
    Tally before = tally();
    clock.advance(100 * MS);
    Tally after = tally();
    long backRejected = back.rejected - backRejectedBefore;
    long frontRejected = front.rejected - frontRejectedBefore;
    long shed = after.shed() - before.shed();
    double goodput = (after.good() - before.good()) / 0.1;
    assertEquals(0, front.gate.localPrice(), "the front end is never congested itself");
    assertTrue(front.gate.downstreamPrice(0) > 0, "it learned the back end's price: " + describe());
    assertTrue(backRejected < 0.1 * shed, "most load is shed before the back end: backRejected="
        + backRejected + " frontRejected=" + frontRejected + " of " + shed + "; " + describe());
    assertTrue(goodput >= 0.7 * CAPACITY, "goodput " + goodput + ": " + describe());
  }

  @Test
  void aStallAtTwiceCapacityDoesNotPriceTheClientsOutOnceItEnds() {
    build(50, false);
    setRate(2 * CAPACITY);
    clock.advance(50 * MS); // converge
    back.stalledUntil = clock.read() + 5 * MS; // nothing finishes for 5 ms; the queue ages
    back.stalls = true;
    long peak = 0;
    for (int i = 0; i < 50; i++) {
      clock.advance(100 * US);
      peak = Math.max(peak, back.gate.localPrice());
    }
    clock.advance(5 * MS); // the backlog drains
    Tally before = tally();
    long refusedBefore = refusedAtClient;
    clock.advance(10 * MS);
    Tally after = tally();
    double goodput = (after.good() - before.good()) / 0.01;
    double refused = (double) (refusedAtClient - refusedBefore) / (after.issued() - before.issued());
    String seen = "peak=" + peak + " goodput=" + goodput / CAPACITY + " refused=" + refused + "; "
        + describe();
    // Seed 42: the price peaked at 29,639 (about 2,000 before the stall; the ceiling, PricePolicy,
    // holds it there); 5–15 ms after the stall ended, goodput was 1.00 of capacity and the clients
    // refused 47 % (half is the least at 2×); seeds 1–7: 1.00, 48 % or less. Without the doubling
    // fall once a saturated price meets a short queue, 0.16–0.22 and 89–92 % (seeds 1–7 and 42),
    // the price still at 9,346–14,911. Without the ceiling (measured before the trend term,
    // PricePolicy) it peaked at 211,283.
    assertTrue(goodput >= 0.8 * CAPACITY, "goodput after the stall: " + seen);
    assertTrue(refused <= 0.6, "at 2× about half is refused at the clients, not all: " + seen);
  }

  /** One surge from 0.8× to 2× capacity, on this (fresh) world. */
  private record SurgeReading(long seed, double peakOverSteady, double firstGoodput,
      double goodput, long refused, long rejectedAtServer, String seen) { }

  private SurgeReading surge(long seed) {
    random = new SplittableRandom(seed);
    build(50, false);
    setRate(0.8 * CAPACITY);
    clock.advance(20 * MS);
    setRate(2 * CAPACITY); // rajomon-nsdi25 §4: the tuning surge, 80 % to 200 %
    Tally surge = tally();
    long peak = 0;
    for (int i = 0; i < 100; i++) { // the first 10 ms
      clock.advance(100 * US);
      peak = Math.max(peak, back.gate.localPrice());
    }
    Tally settled = tally();
    long refusedBefore = refusedAtClient;
    long rejectedBefore = rejected;
    double priceSum = 0;
    for (int i = 0; i < 400; i++) { // the next 40 ms
      clock.advance(100 * US);
      priceSum += back.gate.localPrice();
    }
    Tally end = tally();
    double steadyPrice = priceSum / 400;
    double firstGoodput = (settled.good() - surge.good()) / 0.01 / CAPACITY;
    double goodput = (end.good() - settled.good()) / 0.04 / CAPACITY;
    long refused = refusedAtClient - refusedBefore;
    long rejectedAtServer = rejected - rejectedBefore;
    String seen = "seed=" + seed + " peak=" + peak + " steady=" + steadyPrice
        + " first 10 ms goodput=" + firstGoodput + " then " + goodput + " refused=" + refused
        + " rejected=" + rejectedAtServer + "; " + describe();
    return new SurgeReading(seed, peak / steadyPrice, firstGoodput, goodput, refused,
        rejectedAtServer, seen);
  }

  /**
   * The overshoot and the first 10 ms vary from seed to seed, so they are asserted on the mean of
   * eight seeds (1–8, or the one given with {@code -Dspillway.seed}). Means over seeds 1–8 with the
   * trend term (PricePolicy, weight 10): peak 1.97 × the steady price and 0.880 of capacity in the
   * first 10 ms (single seeds 1.80–2.05 and 0.874–0.893). With weight 0, which holds the price
   * while the queue drains instead, 2.21 and 0.805 (single seeds 2.10–2.48 and 0.764–0.818): the
   * test then fails; with neither the trend nor the hold, 2.93 and 0.726.
   */
  @Test
  void aSurgeFromFourFifthsToTwiceCapacityIsMetWithoutOvershootAndShedAtTheClients() {
    String property = System.getProperty("spillway.seed");
    long[] seeds = property == null || property.isBlank()
        ? new long[] {1, 2, 3, 4, 5, 6, 7, 8} : new long[] {Long.parseLong(property)};
    double peakRatios = 0;
    double firstGoodputs = 0;
    StringBuilder all = new StringBuilder();
    for (long seed : seeds) {
      SurgeReading r = new RajomonControlLoopTest().surge(seed);
      all.append("\n  ").append(r.seen());
      assertTrue(r.goodput() >= 0.95, "after the first 10 ms: " + r.seen());
      assertTrue(r.refused() >= 0.9 * (r.refused() + r.rejectedAtServer()),
          "the excess is refused at the clients, not rejected at the server's cost: " + r.seen());
      peakRatios += r.peakOverSteady();
      firstGoodputs += r.firstGoodput();
    }
    double peakRatio = peakRatios / seeds.length;
    double firstGoodput = firstGoodputs / seeds.length;
    assertTrue(peakRatio <= 2.1, "overshoot, mean peak / steady " + peakRatio + ":" + all);
    assertTrue(firstGoodput >= 0.85, "the surge's first 10 ms, mean " + firstGoodput + ":" + all);
  }
}
