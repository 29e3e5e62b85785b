package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Beyond the paper (rajomon-nsdi25 §6 "Malicious Clients"): a client that writes a huge token count
 * into its header. Without the audit it is admitted at any price, ahead of every honest client;
 * with the audit it is judged with what its session could have earned.
 */
class ForgedTokensTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;
  private static final long FORGED = 1_000_000_000_000L;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 300 * MS);
  private long delay;

  /**
   * Wallets refill 10 tokens per ms (fixed), start with 10, hold at most 1,000; θ = 1 ms, updated
   * every ms; 1 ms over θ raises the price by 500, and no more: the trend term is off, so a delay
   * that jumps from 0 does not add to it.
   */
  private static RajomonConfig config(boolean audit) {
    return RajomonConfig.builder()
        .refill(TokenRefill.FIXED, 10, MS).initialTokens(10).maxTokens(1_000)
        .delayThresholdNanos(MS).priceUpdateIntervalNanos(MS).priceIncrease(500, MS)
        .priceTrendWeight(0).tokenAudit(audit, 0).build();
  }

  private RajomonServerGate server(boolean audit) {
    QueueDelaySignal signal = now -> delay;
    RajomonServerGate gate = new RajomonServerGate(config(audit), new ServerEnvironment(clock,
        clock, signal, ControlChannel.DISCARD, OverloadMetrics.NONE, 4), new SplittableRandom(1));
    gate.start();
    return gate;
  }

  private boolean admitted(RajomonServerGate gate, long session, long tokens) {
    ServerPermit permit = gate.admit(new RequestMetadata().sessionId(session).tokens(tokens),
        clock.read());
    permit.complete(permit.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED, clock.read(),
        new ResponseMetadata());
    return permit.isAdmitted();
  }

  /**
   * Sessions 1–3 and 7 say hello at price 0 and earn for a second; then session 7 spends its 1,000
   * while the queue is 1 ms over θ, so the price climbs to 500 (its ceiling is 1,001) and holds.
   */
  private void priceAt500For1s(RajomonServerGate gate) {
    for (long session : new long[] {1, 2, 3, 7}) {
      assertTrue(admitted(gate, session, 0));
    }
    delay = MS; // at θ: the price holds
    clock.advance(999 * MS);
    delay = 2 * MS; // 1 ms over θ: +500 at the next update
    assertTrue(admitted(gate, 7, 1_000));
    clock.advance(MS);
    delay = MS;
    assertEquals(500, gate.localPrice());
  }

  @Test
  void aForgedHeaderCannotBuyAdmissionAheadOfHonestClients() {
    RajomonServerGate gate = server(true);
    priceAt500For1s(gate); // every session has earned its full 1,000 by now
    assertTrue(admitted(gate, 1, 800), "honest: 800 of its 1,000");
    assertTrue(admitted(gate, 2, FORGED), "the forger is judged with the 1,000 it did earn...");
    assertFalse(admitted(gate, 2, FORGED), "...and then with nothing");
    assertTrue(admitted(gate, 3, 600), "the next honest client is admitted ahead of it");
    for (int i = 0; i < 10; i++) {
      clock.advance(MS);
      assertFalse(admitted(gate, 2, FORGED), "10 tokens a ms do not reach 500 in 10 ms");
    }
    // Each attempt spent what the session held; 50 quiet ms earn 500 again, as for anyone.
    clock.advance(50 * MS);
    assertTrue(admitted(gate, 2, FORGED));
  }

  @Test
  void withoutTheAuditTheForgerIsAlwaysAdmitted() {
    RajomonServerGate gate = server(false);
    priceAt500For1s(gate);
    for (int i = 0; i < 10; i++) {
      assertTrue(admitted(gate, 2, FORGED));
    }
    assertFalse(admitted(gate, 1, 499), "while an honest request below the price is shed");
  }

  @Test
  void overASecondTheForgerGetsNoMoreThanAnHonestClient() {
    RajomonServerGate gate = server(true);
    priceAt500For1s(gate);
    // Two honest clients with real wallets, and a forger; each tries every 100 µs for a second.
    List<RajomonClientGate<String>> honest = new ArrayList<>();
    for (long session = 1; session <= 2; session++) {
      honest.add(new RajomonClientGate<>(config(true),
          new ClientEnvironment(session, 10 * MS, OverloadMetrics.NONE), new SplittableRandom(session)));
    }
    int honestAdmitted = 0;
    int honestRejected = 0;
    int forgedAdmitted = 0;
    for (int step = 0; step < 10_000; step++) {
      clock.advance(100 * US);
      long now = clock.read();
      for (int c = 0; c < honest.size(); c++) {
        RajomonClientGate<String> client = honest.get(c);
        RequestMetadata header = new RequestMetadata();
        if (client.offer("req", now) && client.poll(now, header) != null) {
          ServerPermit permit = gate.admit(header, now);
          ResponseMetadata response = new ResponseMetadata();
          permit.complete(permit.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED, now, response);
          client.onResponse(response.interfaceId(0), now, now);
          if (permit.isAdmitted()) {
            honestAdmitted++;
          } else {
            honestRejected++;
          }
        }
      }
      forgedAdmitted += admitted(gate, 3, FORGED) ? 1 : 0;
    }
    // Each session earns 10,000 tokens a second plus the 1,000 it held; at 500 or more a request,
    // that is at most 22 admissions.
    assertTrue(forgedAdmitted <= 22, "forger admitted " + forgedAdmitted + " of 10,000");
    assertTrue(honestAdmitted / 2 >= forgedAdmitted,
        "honest clients averaged " + honestAdmitted / 2 + ", the forger " + forgedAdmitted);
    assertTrue(honestRejected <= 2, "honest clients are rejected only until they hear the price: "
        + honestRejected);
  }
}
