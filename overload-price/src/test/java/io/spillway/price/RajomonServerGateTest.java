package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ControlChannel;
import io.spillway.api.InterfacePrices;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.EnumMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The server controller (rajomon-nsdi25 §3.4): admission, periodic prices, call graph, lazy prices. */
class RajomonServerGateTest {

  private static final long US = 1_000;
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100 * US);
  private final Map<Status, Integer> decisions = new EnumMap<>(Status.class);
  private long delay;
  private final java.util.List<Long> reportedPrices = new java.util.ArrayList<>();

  /**
   * θ = 50 µs, interval 25 µs (forSlo's for a 200 µs SLO), ±8 tokens per 50 µs away from θ, at
   * least 1 down, every fifth response priced: small numbers to follow. The trend term is off (the
   * price holds while the queue drains), so that each step below is the integral's alone; {@link
   * #theTrendTermFollowsTheChangeInDelay} turns it on, and PricePolicyTest has its arithmetic.
   */
  private static RajomonConfig.Builder config() {
    return RajomonConfig.forSlo(200 * US, 10 * US).toBuilder().priceIncrease(8, 50 * US)
        .priceDecreaseStep(1).priceTrendWeight(0).priceAttachment(PriceAttachment.everyNth(5));
  }

  private RajomonServerGate gate(RajomonConfig config) {
    OverloadMetrics metrics = new OverloadMetrics() {
      @Override
      public void onAdmission(Status decision) {
        decisions.merge(decision, 1, Integer::sum);
      }

      @Override
      public void onPrice(long localPrice) {
        reportedPrices.add(localPrice);
      }
    };
    RajomonServerGate g = new RajomonServerGate(config, new ServerEnvironment(clock, clock,
        now -> delay, ControlChannel.DISCARD, metrics, 4), new SplittableRandom(1));
    g.start();
    return g;
  }

  private ServerPermit send(RajomonServerGate g, long tokens, int interfaceId) {
    return g.admit(new RequestMetadata().sessionId(1).tokens(tokens).interfaceId(interfaceId),
        clock.read());
  }

  private ResponseMetadata complete(ServerPermit p) {
    ResponseMetadata r = new ResponseMetadata();
    p.complete(p.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED, clock.read(), r);
    return r;
  }

  /**
   * One update interval in which a request richer than any price here arrives, so the ceiling
   * ({@link PricePolicy}) stays out of the way; the decisions it adds are forgotten.
   */
  private void tick(RajomonServerGate g) {
    complete(send(g, 1L << 40, 0));
    decisions.clear();
    clock.advance(25 * US);
  }

  private void ticks(RajomonServerGate g, int n) {
    for (int i = 0; i < n; i++) {
      tick(g);
    }
  }

  /** Raises the local price by 8 per tick: 50 µs over θ. */
  private void raiseLocalPriceBy8PerTick(RajomonServerGate g, int ticks) {
    delay = 100 * US;
    for (int i = 0; i < ticks; i++) {
      tick(g);
    }
    delay = 50 * US; // at θ: hold
  }

  @Test
  void thePriceFollowsTheQueueingDelayEveryInterval() {
    RajomonServerGate g = gate(config().build());
    assertEquals(0, g.localPrice());
    delay = 100 * US; // 50 µs over θ: +8
    complete(send(g, 1L << 40, 0));
    clock.advance(25 * US - 1);
    assertEquals(0, g.localPrice(), "no update before the interval");
    clock.advance(1);
    assertEquals(8, g.localPrice());
    assertEquals(100 * US, g.lastQueueingDelayNanos());
    delay = 125 * US; // 75 µs over: +12
    tick(g);
    assertEquals(20, g.localPrice());
    delay = 75 * US; // 25 µs over, but shorter than last time: the queue drains, hold
    tick(g);
    assertEquals(20, g.localPrice());
    tick(g); // 25 µs over, as long as last time: +4
    assertEquals(24, g.localPrice());
    delay = 50 * US; // at θ
    ticks(g, 4);
    assertEquals(24, g.localPrice());
    delay = 49 * US; // 1 µs under: ⌈0.16⌉ = 1 per interval
    ticks(g, 2);
    assertEquals(22, g.localPrice());
    delay = 0; // empty: −8 per interval (the price never saturated: no doubling)
    ticks(g, 2);
    assertEquals(6, g.localPrice());
    tick(g);
    assertEquals(0, g.localPrice());
  }

  @Test
  void startIsIdempotentAndCloseStopsTheUpdates() {
    RajomonServerGate g = gate(config().build());
    g.start();
    delay = 100 * US;
    tick(g);
    assertEquals(8, g.localPrice(), "one update per interval even after two starts");
    g.close();
    clock.advance(250 * US);
    assertEquals(8, g.localPrice());
    g.start();
    clock.advance(250 * US);
    assertEquals(8, g.localPrice(), "a closed gate stays closed");
  }

  @Test
  void thePriceRisesNoHigherThanJustAboveTheRichestRequestBeyondItsCalleesPrice() {
    RajomonServerGate g = gate(config().build());
    delay = 500 * US; // 450 µs over θ: +72 per interval without a ceiling
    clock.advance(25 * US);
    assertEquals(1, g.localPrice(), "no request in the interval: nothing to shed, at most 1");
    clock.advance(25 * US);
    assertEquals(1, g.localPrice(), "and it holds there");
    complete(send(g, 30, 0));
    complete(send(g, 10, 0));
    clock.advance(25 * US);
    assertEquals(31, g.localPrice(), "the richest brought 30: 31 refuses both");
    complete(send(g, 1_000, 0));
    clock.advance(25 * US);
    assertEquals(103, g.localPrice(), "a richer one lets it climb by the full +72");
    clock.advance(25 * US);
    assertEquals(175, g.localPrice(), "the ceiling remembers the last eight intervals' richest");
    delay = 50 * US; // at θ: the price holds while the 1,000 ages out
    clock.advance(6 * 25 * US);
    delay = 500 * US;
    clock.advance(25 * US);
    assertEquals(175, g.localPrice(), "eight intervals on, nothing richer came: it holds");

    g.onDownstreamResponse(1, 0, new ResponseMetadata().price(400), clock.read());
    complete(send(g, 570, 1)); // 570 − 400 = 170 beyond its callee's price: below 175
    clock.advance(25 * US);
    assertEquals(175, g.localPrice(), "the ceiling counts tokens beyond the callees' price");
    complete(send(g, 620, 1)); // 220 beyond
    clock.advance(25 * US);
    assertEquals(221, g.localPrice());
    delay = 0;
    clock.advance(25 * US);
    assertEquals(213, g.localPrice(), "an empty queue lowers it as before: −8");
  }

  @Test
  void aPriceThatSaturatedFallsFasterAtEachShortQueueUntilTheQueueGrowsAgain() {
    RajomonServerGate g = gate(config().build());
    delay = 50_000 * US; // a stall: the queue ages far past θ
    for (int i = 0; i < 3; i++) {
      complete(send(g, 1_000, 0));
      clock.advance(25 * US);
    }
    assertEquals(1_001, g.localPrice(), "saturated: it refuses the richest request of late");
    delay = 0; // the stall is over and the backlog gone: −8, then twice as much each interval
    int[] expected = {993, 977, 945, 881};
    for (int want : expected) {
      complete(send(g, 1_000, 0));
      clock.advance(25 * US);
      assertEquals(want, g.localPrice());
    }
    delay = 30 * US; // under θ but not under θ/2: the queue grows again, ⌈20 · 8 / 50⌉ = 4 down
    tick(g);
    assertEquals(877, g.localPrice());
    delay = 0; // no longer unwinding: the plain −8 per interval
    ticks(g, 2);
    assertEquals(861, g.localPrice());
  }

  @Test
  void theTrendTermFollowsTheChangeInDelay() {
    RajomonServerGate g = gate(config().priceTrendWeight(10).build());
    delay = 100 * US;
    tick(g);
    assertEquals(168, g.localPrice(), "50 µs over θ: +8; 100 µs longer than before: +10 · 16");
    tick(g);
    assertEquals(176, g.localPrice(), "a steady queue: +8, the integral alone");
    delay = 75 * US;
    tick(g);
    assertEquals(140, g.localPrice(), "25 µs over: +4; 25 µs shorter: −10 · 4 (no hold)");
    delay = 0;
    tick(g);
    assertEquals(12, g.localPrice(), "50 µs under: −8; 75 µs shorter: −10 · 12");
  }

  @Test
  void aPriceThatNeverSaturatedFallsAtThePlainRate() {
    RajomonServerGate g = gate(config().build());
    raiseLocalPriceBy8PerTick(g, 10);
    assertEquals(80, g.localPrice());
    delay = 0;
    ticks(g, 4);
    assertEquals(48, g.localPrice(), "−8 at each of four short intervals");
  }

  @Test
  void requestsWhoseTokensCoverThePriceAreAdmittedTheRestRejectedWithThePrice() {
    RajomonServerGate g = gate(config().build());
    ServerPermit free = send(g, 0, 0);
    assertTrue(free.isAdmitted(), "price 0 admits a request with no tokens");
    complete(free);
    raiseLocalPriceBy8PerTick(g, 3);
    assertEquals(24, g.totalPrice(0));
    ServerPermit poor = send(g, 23, 0);
    assertFalse(poor.isAdmitted());
    assertEquals(Status.REJECTED_PRICE, poor.status());
    ResponseMetadata reject = complete(poor);
    assertEquals(Status.REJECTED_PRICE, reject.status());
    assertEquals(24, reject.price(), "a reject always says what it would have cost");
    ServerPermit exact = send(g, 24, 0);
    assertTrue(exact.isAdmitted());
    complete(exact);
    assertFalse(send(g, -5, 0).isAdmitted(), "negative tokens count as none");
    assertEquals(1, decisions.get(Status.OK), "metrics see every decision (since tick's last)");
    assertEquals(2, decisions.get(Status.REJECTED_PRICE));
  }

  @Test
  void metricsHearTheLocalPriceOnceAnUpdate() {
    RajomonServerGate g = gate(config().build());
    raiseLocalPriceBy8PerTick(g, 3);
    assertEquals(java.util.List.of(8L, 16L, 24L), reportedPrices, "one report per update");
    delay = 0; // below θ: the price falls, at least 1 an update
    tick(g);
    assertEquals(4, reportedPrices.size());
    assertTrue(reportedPrices.get(3) < 24, "the fall is reported: " + reportedPrices);
    assertEquals(g.localPrice(), reportedPrices.get(3));
  }

  /**
   * A metrics callback that throws at every price report: the periodic task goes on (Scheduler
   * logs it), and each update must still do all of its work, not only what comes before the
   * report: the callees' prices age and the list of interface prices is rebuilt.
   */
  @Test
  void aPriceReportThatThrowsLeavesNoPartOfTheUpdateUndone() {
    OverloadMetrics broken = new OverloadMetrics() {
      @Override
      public void onPrice(long localPrice) {
        throw new IllegalStateException("a broken meter");
      }
    };
    RajomonServerGate g = new RajomonServerGate(config().build(), new ServerEnvironment(clock,
        clock, now -> delay, ControlChannel.DISCARD, broken, 4), new SplittableRandom(1));
    g.start();
    delay = 100 * US; // 50 µs over θ: +8 at the next update
    complete(send(g, 1L << 40, 0));
    complete(send(g, 1L << 40, 2));
    g.onDownstreamResponse(2, 0, new ResponseMetadata().price(120), clock.read());
    clock.advance(25 * US);
    assertEquals(8, g.localPrice());
    assertEquals(InterfacePrices.of(new int[] {0, 2}, new long[] {8, 128}), g.interfacePrices(),
        "the list is rebuilt at the update");
    delay = 50 * US; // at θ: the local price holds
    clock.advance(25 * US); // the callee was silent for an interval: −8
    assertEquals(112, g.downstreamPrice(2), "a silent callee's price ages");
  }

  /**
   * A metrics callback that throws as a permit completes: the permit is completed once and the
   * exception reaches its caller, but only once the response is whole, so a reject still carries
   * the price it failed to cover.
   */
  @Test
  void aCompletionReportThatThrowsStillLeavesTheRejectItsPrice() {
    OverloadMetrics broken = new OverloadMetrics() {
      @Override
      public void onCompletion(Outcome outcome) {
        throw new IllegalStateException("a broken meter");
      }
    };
    RajomonServerGate g = new RajomonServerGate(config().priceAttachment(PriceAttachment.always())
        .build(), new ServerEnvironment(clock, clock, now -> delay, ControlChannel.DISCARD, broken,
        4), new SplittableRandom(1));
    g.start();
    delay = 100 * US; // 50 µs over θ: +8 at the next update
    assertTrue(send(g, 1L << 40, 0).isAdmitted()); // lifts the ceiling; left open
    clock.advance(25 * US);
    assertEquals(8, g.localPrice());
    for (ServerPermit p : new ServerPermit[] {send(g, 1, 0), send(g, 100, 0)}) {
      ResponseMetadata r = new ResponseMetadata();
      Outcome outcome = p.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED;
      assertThrows(IllegalStateException.class, () -> p.complete(outcome, clock.read(), r));
      assertTrue(p.isCompleted());
      assertEquals(8, r.price(), "the price is written before the callback runs: " + p.status());
    }
  }

  @Test
  void theTotalPriceIsLocalPlusTheHighestCalleePrice() {
    RajomonServerGate g = gate(config().build());
    raiseLocalPriceBy8PerTick(g, 1);
    g.onDownstreamResponse(1, 0, new ResponseMetadata().price(30), clock.read());
    g.onDownstreamResponse(1, 2, new ResponseMetadata().price(12), clock.read());
    g.onDownstreamResponse(2, 0, new ResponseMetadata().price(5), clock.read());
    assertEquals(30, g.downstreamPrice(1));
    assertEquals(38, g.totalPrice(1), "8 + max(30, 12)");
    assertEquals(13, g.totalPrice(2), "8 + 5: interfaces have their own callees");
    assertEquals(8, g.totalPrice(0), "an interface without callees pays the local price");
    assertEquals(8, g.totalPrice(-3), "so does an unknown one");
    assertFalse(send(g, 37, 1).isAdmitted());
    assertTrue(send(g, 38, 1).isAdmitted());
    assertTrue(send(g, 13, 2).isAdmitted());

    g.onDownstreamResponse(1, 0, new ResponseMetadata().price(4), clock.read());
    assertEquals(20, g.totalPrice(1), "callee 0 fell to 4: max is now callee 2's 12");
    g.onDownstreamResponse(1, 2, new ResponseMetadata().status(Status.OK), clock.read());
    assertEquals(20, g.totalPrice(1), "a response without a price changes nothing");
  }

  /**
   * The inbound interface id comes off the wire with the request, and admission prices an id no
   * table holds at the local price alone; the downstream responses its handler collects must not
   * throw on the same id, nor price any real interface.
   */
  @Test
  void aDownstreamPriceForAnInboundInterfaceNoTableHoldsIsIgnored() {
    RajomonServerGate g = gate(config().build());
    raiseLocalPriceBy8PerTick(g, 1);
    for (int inbound : new int[] {-1, Interfaces.MAX_ID + 1, Integer.MAX_VALUE, Integer.MIN_VALUE}) {
      assertTrue(send(g, 8, inbound).isAdmitted(), "priced at the local price: " + inbound);
      g.onDownstreamResponse(inbound, 0, new ResponseMetadata().price(30), clock.read());
      assertEquals(8, g.totalPrice(inbound), "still the local price alone: " + inbound);
    }
    assertEquals(0, g.downstreamPrice(0));
    assertEquals(0, g.downstreamPrice(Interfaces.MAX_ID));
    g.onDownstreamResponse(Interfaces.MAX_ID, 0, new ResponseMetadata().price(30), clock.read());
    assertEquals(38, g.totalPrice(Interfaces.MAX_ID), "the highest id a table holds still counts");
  }

  @Test
  void aCalleePriceNotRefreshedForAnIntervalFallsAsFastAsTheCalleesCould() {
    RajomonServerGate g = gate(config().build());
    delay = 50 * US; // local price holds at 0
    g.onDownstreamResponse(1, 0, new ResponseMetadata().price(120), clock.read());
    g.onDownstreamResponse(1, 1, new ResponseMetadata().price(100), clock.read());
    clock.advance(25 * US); // both were refreshed during this interval
    assertEquals(120, g.downstreamPrice(1));
    g.onDownstreamResponse(1, 1, new ResponseMetadata().price(100), clock.read());
    clock.advance(25 * US); // callee 0 was silent: −8, as its own price at an empty queue could
    assertEquals(112, g.downstreamPrice(1));
    clock.advance(50 * US); // both silent for 2 more intervals, the fall doubling at each:
    // callee 0 3 intervals, 120 − 8 − 16 − 32 = 64; callee 1 2 intervals, 100 − 8 − 16 = 76
    assertEquals(76, g.downstreamPrice(1));
    g.onDownstreamResponse(1, 1, new ResponseMetadata().price(90), clock.read());
    assertEquals(90, g.downstreamPrice(1), "a fresh price replaces the lower bound");
    clock.advance(10_000 * US);
    assertEquals(0, g.downstreamPrice(1));
  }

  @Test
  void everyFifthResponseCarriesThePriceByDefault() {
    RajomonServerGate g = gate(config().build());
    raiseLocalPriceBy8PerTick(g, 1);
    int priced = 0;
    for (int i = 0; i < 100; i++) {
      ResponseMetadata r = complete(send(g, 100, 0));
      if (r.hasPrice()) {
        assertEquals(8, r.price());
        priced++;
      } else {
        assertEquals(ResponseMetadata.NO_PRICE, r.price());
      }
    }
    assertEquals(20, priced);
  }

  @Test
  void rejectsCarryThePriceWhateverTheAttachmentPolicy() {
    RajomonServerGate g = gate(config().priceAttachment(PriceAttachment.onRejectsOnly()).build());
    raiseLocalPriceBy8PerTick(g, 1);
    for (int i = 0; i < 10; i++) {
      assertFalse(complete(send(g, 100, 0)).hasPrice());
      assertEquals(8, complete(send(g, 1, 0)).price());
    }
  }

  @Test
  void attachmentByProbabilityAndAlways() {
    RajomonServerGate sometimes = gate(config().priceAttachment(PriceAttachment.withProbability(0.2)).build());
    int priced = 0;
    for (int i = 0; i < 2_000; i++) {
      priced += complete(send(sometimes, 0, 0)).hasPrice() ? 1 : 0;
    }
    assertEquals(400, priced, 60, "about 20 % (the paper's example)");
    RajomonServerGate always = gate(config().priceAttachment(PriceAttachment.always()).build());
    for (int i = 0; i < 10; i++) {
      assertEquals(0, complete(send(always, 0, 0)).price());
    }
  }

  @Test
  void theAttachedPriceIsTheOneCurrentAtCompletion() {
    RajomonServerGate g = gate(config().priceAttachment(PriceAttachment.always()).build());
    ServerPermit admitted = send(g, 0, 0);
    raiseLocalPriceBy8PerTick(g, 2);
    ResponseMetadata r = new ResponseMetadata();
    admitted.complete(Outcome.FAILED, clock.read(), r);
    assertEquals(Status.FAILED, r.status());
    assertEquals(16, r.price(), "the price moved while the request ran");
  }

  @Test
  void aPricedResponseCarriesEveryCalledInterfacesPriceAsOfTheLastUpdate() {
    RajomonServerGate g = gate(config().build());
    raiseLocalPriceBy8PerTick(g, 1); // local 8, held from here on; interface 0 called
    assertEquals(InterfacePrices.NONE, g.interfacePrices(),
        "one interface called: a response's own price says it all");
    complete(send(g, 1L << 40, 2));
    g.onDownstreamResponse(2, 0, new ResponseMetadata().price(30), clock.read());
    assertEquals(InterfacePrices.NONE, g.interfacePrices(), "the list is built at updates");
    tick(g);
    InterfacePrices expected = InterfacePrices.of(new int[] {0, 2}, new long[] {8, 38});
    assertEquals(expected, g.interfacePrices(), "interfaces 0 and 2, in order of first call");

    ResponseMetadata reject = complete(send(g, 1, 2));
    assertEquals(38, reject.price());
    assertEquals(expected, reject.interfacePrices(), "a reject carries the list too");
    int priced = 0;
    for (int i = 0; i < 10; i++) {
      ResponseMetadata r = complete(send(g, 100, 0));
      assertEquals(r.hasPrice() ? expected : InterfacePrices.NONE, r.interfacePrices(),
          "the list rides only with the response's own price");
      priced += r.hasPrice() ? 1 : 0;
    }
    assertEquals(2, priced, "every fifth");

    g.onDownstreamResponse(2, 0, new ResponseMetadata().price(50), clock.read());
    assertEquals(58, g.totalPrice(2));
    assertEquals(38, complete(send(g, 1, 0)).interfacePrices().price(1),
        "the list moves at the next update, not with every callee response");
    tick(g);
    assertEquals(58, complete(send(g, 1, 0)).interfacePrices().price(1));

    complete(send(g, 1L << 40, -4)); // an id a native-frame peer made up: no exception
    tick(g);
    assertEquals(2, g.interfacePrices().size(), "and is not listed");
  }

  /**
   * A native-frame peer may name any interface id a table holds; the list a price update builds,
   * and every priced response carries, stays bounded, keeping the interfaces called first.
   */
  @Test
  void theListOfInterfacePricesStaysBoundedWhateverIdsPeersMakeUp() {
    RajomonServerGate g = gate(config().build());
    raiseLocalPriceBy8PerTick(g, 1); // interface 0 called
    complete(send(g, 1L << 40, 7));
    for (int id = 100; id < 10_100; id++) {
      complete(send(g, 1L << 40, id));
    }
    tick(g);
    InterfacePrices listed = g.interfacePrices();
    assertEquals(RajomonServerGate.MAX_LISTED_INTERFACES, listed.size());
    assertEquals(0, listed.interfaceId(0));
    assertEquals(7, listed.interfaceId(1));
    assertEquals(8, listed.price(1));
    ResponseMetadata unlisted = complete(send(g, 1, 9_000));
    assertEquals(8, unlisted.price(), "an unlisted interface still hears its own price");
    assertEquals(listed, unlisted.interfacePrices());
  }

  @Test
  void withAllInterfacePricesOffAResponseCarriesOnlyItsOwnPrice() {
    RajomonServerGate g = gate(config().allInterfacePrices(false).build());
    raiseLocalPriceBy8PerTick(g, 2);
    complete(send(g, 1L << 40, 3));
    tick(g);
    assertEquals(InterfacePrices.NONE, g.interfacePrices());
    ResponseMetadata reject = complete(send(g, 1, 3));
    assertTrue(reject.hasPrice());
    assertEquals(InterfacePrices.NONE, reject.interfacePrices());
  }
}
