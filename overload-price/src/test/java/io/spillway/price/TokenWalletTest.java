package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The client wallet (rajomon-nsdi25 §3.3): lazy refill by kind, the cap, spending. */
class TokenWalletTest {

  private static final long MS = 1_000_000;
  private static final long T0 = Long.MAX_VALUE - 25 * MS; // refills straddle the wrap

  private static TokenWallet wallet(TokenRefill kind, long seed) {
    return new TokenWallet(kind, 10, 10 * MS, 10, 1_000, new SplittableRandom(seed));
  }

  @Test
  void fixedRefillAddsTheStepEveryInterval() {
    TokenWallet w = wallet(TokenRefill.FIXED, 1);
    assertEquals(10, w.balance(T0), "starts with the initial tokens at the first reading");
    assertEquals(T0 + 10 * MS, w.nextRefillNanos());
    assertEquals(10, w.balance(T0 + 10 * MS - 1));
    assertEquals(20, w.balance(T0 + 10 * MS));
    assertEquals(40, w.balance(T0 + 35 * MS), "events at 10, 20, 30 ms");
    assertEquals(T0 + 40 * MS, w.nextRefillNanos());
  }

  @Test
  void theCapBoundsAnIdleWallet() {
    TokenWallet w = wallet(TokenRefill.FIXED, 1);
    w.balance(T0);
    assertEquals(1_000, w.balance(T0 + 3_600_000 * MS), "an hour idle: capped, not 3.6 million");
    assertTrue(w.tryWithdraw(1_000, T0 + 3_600_000 * MS));
    assertEquals(0, w.balance(T0 + 3_600_000 * MS));
  }

  @Test
  void uniformRefillDrawsFromZeroToTwiceTheStepMinusOne() {
    TokenWallet w = wallet(TokenRefill.UNIFORM, 7);
    w.balance(T0);
    SplittableRandom replay = new SplittableRandom(7);
    long expected = 10 + replay.nextLong(20) + replay.nextLong(20) + replay.nextLong(20);
    assertEquals(expected, w.balance(T0 + 30 * MS), "three events, each uniform in [0, 19]");

    TokenWallet many = new TokenWallet(TokenRefill.UNIFORM, 10, MS, 0, 1L << 40, new SplittableRandom(3));
    many.balance(0);
    long total = many.balance(4_000 * MS);
    assertEquals(4_000 * 9.5, total, 4_000 * 9.5 * 0.03, "mean step − ½ per event");
  }

  @Test
  void poissonRefillIsDeterministicForASeedAndHasTheMeanRate() {
    TokenWallet a = wallet(TokenRefill.POISSON, 11);
    TokenWallet b = wallet(TokenRefill.POISSON, 11);
    a.balance(T0);
    b.balance(T0);
    long first = a.nextRefillNanos();
    assertEquals(first, b.nextRefillNanos());
    assertEquals(10, a.balance(first - 1));
    assertEquals(20, a.balance(first), "each event adds exactly the step");
    assertTrue(a.nextRefillNanos() - first > 0);
    assertEquals(a.balance(T0 + 500 * MS), b.balance(T0 + 500 * MS));

    TokenWallet rate = new TokenWallet(TokenRefill.POISSON, 1, MS, 0, 1L << 40, new SplittableRandom(5));
    rate.balance(0);
    long events = 0;
    for (long t = 100 * MS; t <= 3_000 * MS; t += 100 * MS) { // touched now and then, as a client does
      events = rate.balance(t);
    }
    assertEquals(3_000, events, 3_000 * 0.05, "one event per ms on average");
  }

  @Test
  void poissonGapsVary() {
    TokenWallet w = new TokenWallet(TokenRefill.POISSON, 1, MS, 0, 1_000, new SplittableRandom(2));
    w.balance(0);
    long previous = 0;
    long shortest = Long.MAX_VALUE;
    long longest = 0;
    for (int i = 0; i < 200; i++) {
      long next = w.nextRefillNanos();
      shortest = Math.min(shortest, next - previous);
      longest = Math.max(longest, next - previous);
      previous = next;
      w.balance(next);
    }
    assertTrue(shortest < MS / 5 && longest > 3 * MS, "exponential gaps: " + shortest + ".." + longest);
  }

  @Test
  void aFullPoissonWalletRestartsItsProcessAtTheReading() {
    TokenWallet w = new TokenWallet(TokenRefill.POISSON, 10, MS, 1_000, 1_000, new SplittableRandom(4));
    w.balance(0);
    assertEquals(1_000, w.balance(50 * MS));
    assertTrue(w.nextRefillNanos() - 50 * MS > 0, "the next event is after the reading");
  }

  @Test
  void hugeIdleGapsWithAnUncappedWalletAreCheap() {
    for (TokenRefill kind : TokenRefill.values()) {
      TokenWallet w = new TokenWallet(kind, 10, 1_000, 0, 1L << 40, new SplittableRandom(9));
      w.balance(0);
      long balance = w.balance(1_000_000_000L * 1_000); // a million intervals... times a thousand
      assertEquals(1e10, balance, 1e10 * 0.06, kind + ": about 10 tokens per interval");
    }
  }

  @Test
  void anOlderReadingAccruesNothing() {
    TokenWallet w = wallet(TokenRefill.FIXED, 1);
    w.balance(T0);
    assertEquals(30, w.balance(T0 + 20 * MS));
    assertEquals(30, w.balance(T0 + 5 * MS));
    assertEquals(30, w.balance(T0 + 20 * MS));
  }

  @Test
  void withdrawingNeedsTheBalance() {
    TokenWallet w = wallet(TokenRefill.FIXED, 1);
    assertFalse(w.tryWithdraw(11, T0));
    assertTrue(w.tryWithdraw(10, T0));
    assertFalse(w.tryWithdraw(1, T0));
    assertTrue(w.tryWithdraw(0, T0));
    w.deposit(5_000, T0);
    assertEquals(1_000, w.balance(T0), "deposits are capped too");
    assertThrows(IllegalArgumentException.class, () -> w.tryWithdraw(-1, T0));
    assertThrows(IllegalArgumentException.class, () -> w.deposit(-1, T0));
  }

  @Test
  void uniformSpendingCoversZeroToTheWholeBalance() {
    TokenWallet w = new TokenWallet(TokenRefill.FIXED, 10, MS, 0, 1_000, new SplittableRandom(8));
    w.balance(0);
    int[] counts = new int[11];
    long t = 0;
    for (int i = 0; i < 11_000; i++) {
      t += MS;
      long before = w.balance(t);
      assertEquals(10, before);
      long spent = w.withdrawUniform(t);
      counts[(int) spent]++;
      w.deposit(spent, t);
      w.tryWithdraw(10, t); // back to zero for the next refill
    }
    for (int k = 0; k <= 10; k++) {
      assertEquals(1_000, counts[k], 150, "spent " + k + " about 1 in 11 times");
    }
    TokenWallet empty = new TokenWallet(TokenRefill.FIXED, 10, MS, 0, 1_000, new SplittableRandom(8));
    assertEquals(0, empty.withdrawUniform(0));
  }

  @Test
  void parametersAreChecked() {
    SplittableRandom r = new SplittableRandom(1);
    assertThrows(IllegalArgumentException.class, () -> new TokenWallet(TokenRefill.FIXED, 0, MS, 0, 10, r));
    assertThrows(IllegalArgumentException.class, () -> new TokenWallet(TokenRefill.FIXED, 1, 0, 0, 10, r));
    assertThrows(IllegalArgumentException.class, () -> new TokenWallet(TokenRefill.FIXED, 1, MS, 11, 10, r));
    assertThrows(IllegalArgumentException.class, () -> new TokenWallet(TokenRefill.FIXED, 11, MS, 0, 10, r));
    assertThrows(IllegalArgumentException.class,
        () -> new TokenWallet(TokenRefill.FIXED, 1, MS, 0, RajomonConfig.MAX_TOKENS + 1, r));
  }
}
