package io.spillway.asqm;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One lock's waits as {@link ContendedLockFinder} counts them, whether recorded one by one (JFR)
 * or seen in thread dumps ({@link ThreadDumpLockWaits}): how many, their summed time by the frame
 * that waited, and the longest. Not thread-safe.
 */
final class LockTally {

  /** Most total waiting first: the finder's ranking. */
  static final Comparator<ContendedLockFinder.LockContention> MOST_WAITING_FIRST =
      Comparator.comparingLong(ContendedLockFinder.LockContention::totalWaitNanos).reversed();

  private final String lockClass;
  private final Map<String, Long> timeBySite = new HashMap<>();
  private long waits;
  private long total;
  private long max;

  LockTally(String lockClass) {
    this.lockClass = lockClass;
  }

  /** A wait for this lock begins. */
  void newWait() {
    waits++;
  }

  /**
   * {@code nanos} more of waiting at {@code site}; {@code waitSoFar} is the length of the wait it
   * belongs to so far (the longest is kept).
   */
  void add(String site, long nanos, long waitSoFar) {
    total += nanos;
    max = Math.max(max, waitSoFar);
    timeBySite.merge(site, nanos, Long::sum);
  }

  /** The lock's row, labelled with the frame that waited longest in total. */
  ContendedLockFinder.LockContention result(boolean sampled) {
    String site = timeBySite.entrySet().stream().max(Map.Entry.comparingByValue())
        .map(Map.Entry::getKey).orElse("?");
    return new ContendedLockFinder.LockContention(lockClass, site, waits, total, max, sampled);
  }

  /** The rows of {@code tallies}, most total waiting first. */
  static List<ContendedLockFinder.LockContention> ranked(Collection<LockTally> tallies, boolean sampled) {
    List<ContendedLockFinder.LockContention> ranked = new ArrayList<>();
    for (LockTally t : tallies) {
      ranked.add(t.result(sampled));
    }
    ranked.sort(MOST_WAITING_FIRST);
    return ranked;
  }
}
