package io.spillway.harness.grpcdemo;

import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;

/**
 * The demos' open-loop schedule: Poisson arrivals at a fixed rate, each handed over with the time
 * it was due, so a generator that falls behind adds to latency instead of hiding it
 * (docs/design.md, "Measures"). Runs on the caller's thread, which parks between arrivals and
 * never spins: the answers are read by an event loop on the same core, and a spinning issuer would
 * hold it off for a scheduler slice (milliseconds of false latency).
 */
final class PoissonArrivals {

  private PoissonArrivals() { }

  /**
   * Calls {@code arrival} with each arrival's due time ({@code System.nanoTime()}), from {@code
   * start} until {@code end}, at {@code rps} on average.
   */
  static void drive(double rps, long start, long end, long seed, LongConsumer arrival) {
    driveWhile(rps, start, seed, due -> due - end < 0, arrival);
  }

  /**
   * As {@link #drive}, for as long as {@code more} holds for the next arrival's due time, asked
   * again after each park: a load that runs until told to stop ({@link GrpcFloodMain}'s windows).
   */
  static void driveWhile(double rps, long start, long seed, LongPredicate more, LongConsumer arrival) {
    SplittableRandom random = new SplittableRandom(seed);
    double meanGap = 1e9 / rps;
    long next = start;
    while (more.test(next)) {
      long wait = next - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
        continue;
      }
      arrival.accept(next);
      next += (long) (-Math.log(1 - random.nextDouble()) * meanGap);
    }
  }
}
