package io.spillway.threading;

/**
 * µTune's load detector (mutune-osdi18 §4, "Runtime adaptation", steps 2–3; §5: a 5-entry buffer):
 * each arrival's timestamp goes into a small circular buffer, and the arrival rate is read from
 * arrival counts and stamps. Event-based: every {@code size} arrivals close a window, so a
 * precipitous rise is seen after a few windows of arrivals rather than at the end of a time window.
 *
 * <p>The estimate is the arrivals since the start of the last {@code smoothing} windows over the
 * time since then ({@code (n − n₀) / (now − t₀)}), not the median of per-window rates the authors'
 * code takes. Per-window rates are sampled per arrival, so under bursty arrivals (a client whose
 * credits release its queue at once, Breakwater §3.2) the windows inside a burst, which span almost
 * no time, outnumber the others and the median reads the burst's rate as the load (it read
 * ~375,000/s on a 22,000/s stream). Counting over the whole span weights time instead, and a
 * silence lowers the estimate as it goes on, since {@code now} keeps moving.
 *
 * <p>The span runs to the reading, not to the youngest arrival, so that a silence lowers the
 * estimate: at a steady rate a reading just before an arrival is low by one gap over the span (at
 * most ~2 % with 9 windows of 5). It also means the estimate is the rate <em>now</em>: read a few
 * milliseconds after a load has stopped, it reads that load low by the silence's share of the span.
 *
 * <p>{@link #record} is called by one thread (the network thread that reads the requests);
 * {@link #estimate} and {@link #updates} by one adaptation thread: it reads the stamps without
 * locking, and a torn read of one slot moves one window's start. Not otherwise thread-safe.
 */
public final class ArrivalRateEstimator {

  private final long[] stamps;
  private final long[] markCounts; // arrivals counted when each of the last windows closed
  private final long[] markStamps; // and the stamp of the arrival that closed it
  private volatile long recorded; // arrivals recorded; the next slot is recorded % length
  private int marks;
  private int nextMark;
  private long lastMarkCount;
  private long updates;
  private double newsRate = Double.POSITIVE_INFINITY; // the estimate when updates last moved
  private long counted; // arrivals the last estimate counted

  /**
   * @param size the circular buffer's entries, arrivals per window (µTune: 5)
   * @param smoothing how many windows the estimate spans
   */
  public ArrivalRateEstimator(int size, int smoothing) {
    if (size < 2 || smoothing < 1 || smoothing == Integer.MAX_VALUE) {
      // smoothing + 1 marks are kept: the last windows and the start of the oldest
      throw new IllegalArgumentException("size >= 2 and 1 <= smoothing < " + Integer.MAX_VALUE + ": " + size
          + ", " + smoothing);
    }
    stamps = new long[size];
    markCounts = new long[smoothing + 1];
    markStamps = new long[smoothing + 1];
  }

  /** Records an arrival at {@code nowNanos}. One writer thread. */
  public void record(long nowNanos) {
    long n = recorded;
    stamps[(int) (n % stamps.length)] = nowNanos;
    recorded = n + 1;
  }

  /** Arrivals recorded so far. */
  public long recorded() {
    return recorded;
  }

  /**
   * How many arrivals the last {@link #estimate} counted (0 if it had none to count): {@code
   * smoothing} windows of at least {@code size} arrivals each once the estimator is full, more where
   * several arrivals come between two readings (a window closes at a reading). The estimate's
   * relative error is about {@code 1 / √counted}. Read by the adaptation thread, after {@link
   * #estimate}.
   */
  long counted() {
    return counted;
  }

  /**
   * How many times the estimate has taken new information: a window closed, or a silence longer
   * than the estimate's span lowered it by at least one arrival's share (one of the arrivals it
   * counts) since the last time. The adaptation decides only when this has moved.
   *
   * <p>Not every reading during a silence: the adaptation sums the estimates of several network
   * threads, and one that has fallen silent would otherwise move this on every reading, making
   * every tick a decision on the others' unchanged estimates, each counted again toward a move's
   * confirmations. A silence still counts at once when it outlasts the span (the estimate is then
   * below half what it read at the last arrival) and then as it keeps lowering the estimate; the
   * less it lowers it per reading, the fewer readings it counts.
   */
  public long updates() {
    return updates;
  }

  /** The arrival rate at {@code nowNanos}, per second; 0 before two arrivals. */
  public double estimate(long nowNanos) {
    long n = recorded;
    if (n < 2) {
      counted = 0;
      return 0;
    }
    long youngestCount = n - 1;
    long youngest = stamps[(int) (youngestCount % stamps.length)];
    boolean closed = n - lastMarkCount >= stamps.length;
    if (closed) {
      markCounts[nextMark] = youngestCount;
      markStamps[nextMark] = youngest;
      nextMark = (nextMark + 1) % markCounts.length;
      marks = Math.min(marks + 1, markCounts.length);
      lastMarkCount = n;
      updates++;
    }
    // The start: the oldest window mark kept, or the oldest arrival still in the buffer if older.
    long startCount = n - Math.min(n, stamps.length);
    long start = stamps[(int) (startCount % stamps.length)];
    if (marks > 0) {
      int oldest = marks < markCounts.length ? 0 : nextMark;
      if (markCounts[oldest] < startCount) {
        startCount = markCounts[oldest];
        start = markStamps[oldest];
      }
    }
    long span = nowNanos - start;
    if (span <= 0) {
      newsRate = Double.POSITIVE_INFINITY; // no time to count over: the next estimate is news
      counted = 0;
      return 0;
    }
    counted = youngestCount - startCount;
    double rate = counted * 1e9 / span;
    if (closed) {
      newsRate = rate;
    } else if (marks > 0 && nowNanos - youngest > youngest - start
        && rate <= newsRate * (1 - 1.0 / counted)) {
      updates++; // silent for longer than the span, and the estimate has fallen: news
      newsRate = rate;
    }
    return rate;
  }
}
