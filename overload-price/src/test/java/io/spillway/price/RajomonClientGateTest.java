package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.InterfaceCall;
import io.spillway.api.InterfacePrices;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The client controller (rajomon-nsdi25 §3.3): paying, failing fast or waiting, price tables. */
class RajomonClientGateTest {

  private static final long MS = 1_000_000;
  private static final long T0 = Long.MAX_VALUE - 5 * MS; // the clock wraps mid-test

  record Call(String name, int interfaceId) implements InterfaceCall { }

  /** Fixed refill of 10 tokens per ms, 10 to start, at most 1,000: easy arithmetic. */
  private static RajomonConfig.Builder config() {
    return RajomonConfig.builder().refill(TokenRefill.FIXED, 10, MS).initialTokens(10).maxTokens(1_000);
  }

  private static <R> RajomonClientGate<R> gate(RajomonConfig config, long sloNanos) {
    return new RajomonClientGate<>(config, new ClientEnvironment(7, sloNanos, OverloadMetrics.NONE),
        new SplittableRandom(42));
  }

  private static void hear(RajomonClientGate<?> gate, int interfaceId, long price) {
    gate.onResponse(new ResponseMetadata().status(Status.REJECTED_PRICE).price(price)
        .interfaceId(interfaceId), T0, T0);
  }

  @Test
  void failFastRefusesWhatTheWalletCannotPayForAndSendsWhatItCan() {
    RajomonClientGate<Call> gate = gate(config().build(), 10 * MS);
    Call first = new Call("first", 0);
    assertTrue(gate.offer(first, T0), "price 0: anything can be paid");
    RequestMetadata header = new RequestMetadata();
    assertSame(first, gate.poll(T0, header));
    assertEquals(7, header.sessionId());
    assertEquals(0, header.interfaceId());
    assertEquals(0, header.demand());
    long spent = header.tokens();
    assertTrue(spent >= 0 && spent <= 10, "uniform in [0, 10]: " + spent);
    assertEquals(10 - spent, gate.balance(T0));

    hear(gate, 0, 50);
    assertEquals(50, gate.knownPrice(0));
    assertFalse(gate.offer(new Call("refused", 0), T0), "cannot pay 50");
    assertEquals(0, gate.queued());

    long later = T0 + 5 * MS; // 50 more tokens, past the wrap
    long balance = gate.balance(later);
    assertTrue(balance >= 50);
    assertTrue(gate.offer(new Call("paid", 0), later));
    assertEquals("paid", gate.poll(later, header.reset()).name());
    assertTrue(header.tokens() >= 50 && header.tokens() <= balance, header.toString());
    assertEquals(balance - header.tokens(), gate.balance(later));
  }

  @Test
  void tokensAreUniformBetweenTheKnownPriceAndTheBalance() {
    RajomonClientGate<Call> gate = gate(config().build(), 10 * MS);
    hear(gate, 0, 20);
    long now = T0;
    gate.balance(now);
    boolean sawPrice = false;
    boolean sawBalance = false;
    RequestMetadata header = new RequestMetadata();
    for (int i = 0; i < 2_000; i++) {
      now += 3 * MS;
      long balance = gate.balance(now);
      assertTrue(gate.offer(new Call("c" + i, 0), now));
      gate.poll(now, header.reset());
      long tokens = header.tokens();
      assertTrue(tokens >= 20 && tokens <= balance, tokens + " not in [20, " + balance + "]");
      sawPrice |= tokens == 20;
      sawBalance |= tokens == balance;
    }
    assertTrue(sawPrice && sawBalance, "both ends of the range are drawn");
  }

  @Test
  void aFailFastRequestIsPaidAtOfferSoABatchCannotOverspend() {
    RajomonClientGate<Call> gate = gate(config().build(), 10 * MS);
    hear(gate, 0, 4);
    assertTrue(gate.offer(new Call("a", 0), T0));
    assertTrue(gate.offer(new Call("b", 0), T0));
    assertFalse(gate.offer(new Call("c", 0), T0), "10 tokens pay for two requests at 4");
    RequestMetadata header = new RequestMetadata();
    gate.poll(T0, header);
    long a = header.tokens();
    gate.poll(T0, header.reset());
    long b = header.tokens();
    assertTrue(a >= 4 && b >= 4 && a + b <= 10, a + " + " + b);
    assertEquals(0, gate.queued());
  }

  @Test
  void waitingHoldsARequestUntilTheWalletCanPay() {
    RajomonClientGate<Call> gate = gate(config().clientWaitTimeoutNanos(5 * MS).build(), 10 * MS);
    hear(gate, 0, 50);
    Call call = new Call("waits", 0);
    assertTrue(gate.offer(call, T0), "waiting mode queues instead of refusing");
    RequestMetadata header = new RequestMetadata();
    assertNull(gate.poll(T0, header));
    assertEquals(T0 + MS, gate.nextWakeupNanos(), "the next refill");
    assertNull(gate.poll(T0 + MS, header));
    assertEquals(T0 + 2 * MS, gate.nextWakeupNanos());
    assertSame(call, gate.poll(T0 + 4 * MS, header), "10 + 4 × 10 = 50");
    assertEquals(50, header.tokens(), "the whole balance, which is exactly the price");
    assertEquals(0, gate.queued());
  }

  @Test
  void aWaitingRequestExpiresAtTheWaitTimeout() {
    RajomonClientGate<Call> gate = gate(config().clientWaitTimeoutNanos(2 * MS).build(), 10 * MS);
    hear(gate, 0, 500);
    gate.offer(new Call("old", 0), T0);
    gate.offer(new Call("young", 0), T0 + MS / 2);
    assertNull(gate.poll(T0, new RequestMetadata()));
    assertEquals(T0 + MS, gate.nextWakeupNanos(), "a refill comes before the expiry");
    List<Call> expired = new ArrayList<>();
    assertEquals(0, gate.expire(T0 + 2 * MS - 1, expired::add));
    assertEquals(1, gate.expire(T0 + 2 * MS, expired::add));
    assertEquals("old", expired.get(0).name());
    assertEquals(1, gate.expire(T0 + 2 * MS + MS / 2, expired::add));
    assertEquals(0, gate.queued());
  }

  @Test
  void theSloBoundsTheWaitToo() {
    RajomonClientGate<Call> gate = gate(config().clientWaitTimeoutNanos(50 * MS).build(), 3 * MS);
    hear(gate, 0, 900);
    gate.offer(new Call("doomed", 0), T0);
    assertNull(gate.poll(T0, new RequestMetadata()));
    List<Call> expired = new ArrayList<>();
    assertEquals(1, gate.expire(T0 + 3 * MS, expired::add));
    assertEquals(1, expired.size());
  }

  @Test
  void aPaidRequestThatExpiresUnsentIsRefunded() {
    RajomonClientGate<Call> gate = gate(config().build(), 2 * MS);
    hear(gate, 0, 8);
    assertTrue(gate.offer(new Call("never polled", 0), T0));
    assertEquals(2, gate.balance(T0), "8 set aside");
    assertEquals(1, gate.expire(T0 + 2 * MS, c -> { }));
    assertEquals(30, gate.balance(T0 + 2 * MS), "2 + 20 refilled + 8 refunded");
  }

  @Test
  void pricesAreKeptPerInterface() {
    RajomonClientGate<Call> gate = gate(config().build(), 10 * MS);
    hear(gate, 3, 400);
    assertEquals(400, gate.knownPrice(3));
    assertEquals(0, gate.knownPrice(0));
    assertEquals(0, gate.knownPrice(9), "never heard: 0");
    assertFalse(gate.offer(new Call("expensive", 3), T0));
    assertTrue(gate.offer(new Call("cheap", 0), T0));
    RequestMetadata header = new RequestMetadata();
    assertEquals("cheap", gate.poll(T0, header).name());
    assertEquals(0, header.interfaceId());

    gate.onResponse(new ResponseMetadata().interfaceId(3), T0, T0);
    assertEquals(400, gate.knownPrice(3), "a response without a price changes nothing");
    gate.onResponse(new ResponseMetadata().interfaceId(3).price(100), T0, T0);
    assertEquals(100, gate.knownPrice(3), "a success with a price updates the entry");
    assertEquals(0, gate.knownPrice(0));
  }

  @Test
  void aResponseOfOneInterfaceUpdatesThePricesOfTheOthersThisSessionCalls() {
    // Listed prices lower known ones at once here; the default waits (next test).
    RajomonClientGate<Call> gate = gate(config().listLowersAfterIntervals(0).build(), 10 * MS);
    hear(gate, 2, 400); // heard in a spike
    assertFalse(gate.offer(new Call("stuck", 2), T0), "the wallet holds 10: nothing is sent to "
        + "interface 2, so nothing would tell this session its price fell");
    assertTrue(gate.offer(new Call("other", 1), T0));
    gate.poll(T0, new RequestMetadata());
    gate.onResponse(new ResponseMetadata().interfaceId(1).price(3).interfacePrices(
        InterfacePrices.of(new int[] {1, 2, 9}, new long[] {4, 5, 700})), T0, T0 + MS);
    assertEquals(5, gate.knownPrice(2), "the list says interface 2 fell");
    assertEquals(3, gate.knownPrice(1), "the response's own price is applied after the list");
    assertEquals(0, gate.knownPrice(9), "interface 9 was never called here: dropped");
    assertTrue(gate.offer(new Call("unstuck", 2), T0 + MS), "10 more tokens by now cover 5");

    gate.onControl(new ResponseMetadata().interfacePrices(
        InterfacePrices.of(new int[] {2}, new long[] {60})), T0 + MS);
    assertEquals(60, gate.knownPrice(2), "a control message's list counts too");
  }

  @Test
  void aListedPriceRaisesAKnownOneAtOnceButLowersItOnlyOnceItIsStale() {
    assertEquals(100, RajomonConfig.builder().build().listLowersAfterIntervals(), "the default");
    // Prices update every 1 ms; a listed price may lower a known one 5 intervals after it was heard.
    RajomonClientGate<Call> gate = gate(config().priceUpdateIntervalNanos(MS).listLowersAfterIntervals(5)
        .build(), 10 * MS);
    hear(gate, 2, 400); // at T0
    gate.onResponse(list(2, 5), T0, T0 + 4 * MS);
    assertEquals(400, gate.knownPrice(2), "heard 4 intervals ago: a lower listed price waits");
    gate.onResponse(list(2, 900), T0, T0 + 4 * MS);
    assertEquals(900, gate.knownPrice(2), "a higher listed price is news at once");
    gate.onResponse(list(2, 5), T0, T0 + 8 * MS);
    assertEquals(900, gate.knownPrice(2), "the rise was heard 4 intervals ago");
    gate.onResponse(list(2, 5), T0, T0 + 9 * MS);
    assertEquals(5, gate.knownPrice(2), "5 intervals unconfirmed: the listed price is taken");
    gate.onResponse(list(2, 3), T0, T0 + 9 * MS);
    assertEquals(3, gate.knownPrice(2), "a lowered price is not a confirmation: it follows the list down");
    gate.onResponse(new ResponseMetadata().interfaceId(2).price(2), T0, T0 + 9 * MS);
    assertEquals(2, gate.knownPrice(2), "the interface's own response is taken whatever it says");
    gate.onResponse(list(2, 0), T0, T0 + 10 * MS);
    assertEquals(2, gate.knownPrice(2), "and confirms it: lowering waits again");
    gate.onResponse(list(2, 2), T0, T0 + 14 * MS);
    gate.onResponse(list(2, 0), T0, T0 + 18 * MS);
    assertEquals(2, gate.knownPrice(2), "an equal listed price confirms it too");
  }

  /** A response of interface 1 listing {@code price} for interface {@code id}. */
  private static ResponseMetadata list(int id, long price) {
    return new ResponseMetadata().interfaceId(1).interfacePrices(
        InterfacePrices.of(new int[] {id}, new long[] {price}));
  }

  @Test
  void requestsThatDoNotNameAnInterfaceCallInterfaceZero() {
    RajomonClientGate<String> gate = gate(config().build(), 10 * MS);
    hear(gate, 0, 1_000_000);
    hear(gate, 0, 11);
    assertFalse(gate.offer("plain", T0), "interface 0 costs 11, the wallet holds 10");
  }

  @Test
  void aPriceAboveTheCapWaitsUntilItMayHaveFallenWithinTheCapThenAFullWalletProbes() {
    // Cap 100, 10 tokens per ms; prices update every 1 ms and fall at most 80 at the first update
    // with an empty queue, twice as much at each next one (PricePolicy#lowestAfter): 80 · (2^k − 1)
    // after k updates. 100,000 heard at T0 may be 100 at T0 + 11 ms.
    RajomonClientGate<Call> gate = gate(config().maxTokens(100).priceUpdateIntervalNanos(MS)
        .build(), 100 * MS);
    hear(gate, 0, 100_000);
    assertFalse(gate.offer(new Call("poor", 0), T0));
    assertEquals(100, gate.balance(T0 + 9 * MS), "full after 9 ms");
    assertFalse(gate.offer(new Call("too early", 0), T0 + 10 * MS),
        "still ≥ 100,000 − 80 × 1,023 = 18,160: the old rule sent the whole wallet here, to be rejected");
    assertEquals(100, gate.balance(T0 + 10 * MS), "a refused request costs nothing");
    assertTrue(gate.offer(new Call("probe", 0), T0 + 11 * MS), "may be 0 by now");
    RequestMetadata header = new RequestMetadata();
    gate.poll(T0 + 11 * MS, header);
    assertEquals(100, header.tokens(), "the probe carries the whole wallet");
    assertEquals(0, gate.balance(T0 + 11 * MS));

    gate.onResponse(new ResponseMetadata().status(Status.REJECTED_PRICE).price(200_000)
        .interfaceId(0), T0 + 11 * MS, T0 + 16 * MS);
    assertEquals(100, gate.balance(T0 + 25 * MS), "full again");
    assertFalse(gate.offer(new Call("waits", 0), T0 + 27 * MS),
        "200,000 − 80 × 2,047 = 36,240 > 100");
    assertTrue(gate.offer(new Call("probes again", 0), T0 + 28 * MS), "200,000 − 80 × 4,095 < 0");
  }

  @Test
  void aPriceWithinTheCapIsNeverProjectedDownward() {
    RajomonClientGate<Call> gate = gate(config().priceUpdateIntervalNanos(MS).build(), 100 * MS);
    hear(gate, 0, 900);
    assertEquals(10, gate.balance(T0));
    assertFalse(gate.offer(new Call("poor", 0), T0 + 50 * MS),
        "510 tokens cannot pay 900, however old the price: that is rate limiting");
    assertTrue(gate.offer(new Call("rich", 0), T0 + 90 * MS), "910 ≥ 900");
  }

  @Test
  void waitingIsFirstInFirstOut() {
    RajomonClientGate<Call> gate = gate(config().clientWaitTimeoutNanos(5 * MS).build(), 10 * MS);
    hear(gate, 1, 30);
    gate.offer(new Call("expensive", 1), T0);
    gate.offer(new Call("free", 0), T0);
    RequestMetadata header = new RequestMetadata();
    assertNull(gate.poll(T0, header), "the free call waits behind the older one");
    assertEquals("expensive", gate.poll(T0 + 2 * MS, header).name());
    assertEquals(30, header.tokens());
    assertEquals(1, header.interfaceId());
    assertEquals(1, header.demand(), "one still queued behind it");
    assertEquals("free", gate.poll(T0 + 2 * MS, header.reset()).name());
    assertEquals(0, header.tokens(), "an empty wallet can still pay a price of 0");
  }
}
