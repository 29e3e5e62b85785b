package trial;

/** Real CPU work, calibrated once: iterations of a xorshift loop per microsecond. */
final class Cpu {
  static volatile long sink;
  private static double itersPerMicro;

  static synchronized void calibrate() {
    if (itersPerMicro > 0) return;
    long iters = 200_000;
    for (int i = 0; i < 50; i++) spin(iters); // warm up
    long best = Long.MAX_VALUE;
    for (int i = 0; i < 30; i++) {
      long t = System.nanoTime(); spin(iters); best = Math.min(best, System.nanoTime() - t);
    }
    itersPerMicro = iters * 1000.0 / best;
    System.out.printf("cpu: %.0f iterations per us%n", itersPerMicro);
  }

  static long work(long micros) {
    return spin((long) (micros * itersPerMicro));
  }

  static long spin(long iters) {
    long x = 88172645463325252L ^ System.nanoTime();
    for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; }
    sink = x;
    return x;
  }
}
