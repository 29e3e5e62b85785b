package io.spillway.threading;

import java.util.Locale;
import java.util.Objects;

/**
 * One of µTune's threading models (mutune-osdi18 §3.1–§3.2): where an admitted request runs and how
 * the network thread waits for the next one, with the worker pool's size.
 *
 * <ul>
 *   <li>{@link Execution#INLINE}: the request runs on the network thread that read it; no
 *       hand-off, no worker wake-up, but one request at a time per network thread.
 *   <li>{@link Execution#DISPATCH}: the network thread hands the request to a pool of {@link
 *       #workers()} platform threads; requests that block (on leaves, locks) overlap.
 *   <li>{@link Reception#BLOCK}: the network thread sleeps in {@code epoll_wait} when it has nothing
 *       to do and the kernel wakes it on arrival (µTune measured such wake-ups at 5–64 µs, Fig. 9).
 *   <li>{@link Reception#POLL}: it never sleeps; it asks the kernel for ready sockets without
 *       waiting, over and over, burning its core to avoid the wake-up.
 * </ul>
 *
 * <p>Written as µTune names its configurations ({@code SIP1}, {@code SDB1-50}), with the
 * synchronous prefix dropped: {@code IP}, {@code IB}, {@code DP8}, {@code DB8} (see {@link #parse}).
 *
 * <p>Immutable and thread-safe.
 *
 * @param execution in-line or dispatch
 * @param reception block or poll
 * @param workers the worker pool's size under dispatch; 0 under in-line
 */
public record ThreadingModel(Execution execution, Reception reception, int workers) {

  /** Where an admitted request runs. */
  public enum Execution { INLINE, DISPATCH }

  /** How the network thread waits for work. */
  public enum Reception { BLOCK, POLL }

  /** Validates: dispatch needs at least one worker, in-line has none. */
  public ThreadingModel {
    Objects.requireNonNull(execution, "execution");
    Objects.requireNonNull(reception, "reception");
    if (execution == Execution.DISPATCH ? workers < 1 || workers > 4096 : workers != 0) {
      throw new IllegalArgumentException(execution == Execution.DISPATCH
          ? "a dispatch model needs 1 to 4096 workers, got " + workers
          : "an in-line model has no workers, got " + workers);
    }
  }

  /** In-line, with the given reception. */
  public static ThreadingModel inline(Reception reception) {
    return new ThreadingModel(Execution.INLINE, reception, 0);
  }

  /** Dispatch to {@code workers} threads. */
  public static ThreadingModel dispatch(Reception reception, int workers) {
    return new ThreadingModel(Execution.DISPATCH, reception, workers);
  }

  /** Whether the network threads poll. */
  public boolean polls() {
    return reception == Reception.POLL;
  }

  /** Whether requests run in-line on the network thread. */
  public boolean inline() {
    return execution == Execution.INLINE;
  }

  /** µTune's short name: {@code IP}, {@code IB}, {@code DP8}, {@code DB8}. */
  public String name() {
    return (inline() ? "I" : "D") + (polls() ? "P" : "B") + (inline() ? "" : Integer.toString(workers));
  }

  @Override
  public String toString() {
    return name();
  }

  /**
   * Parses {@link #name()}'s form, case-insensitively: {@code IP}, {@code IB}, {@code DPn}, {@code
   * DBn}.
   *
   * @throws IllegalArgumentException naming the text and the expected form
   */
  public static ThreadingModel parse(String text) {
    String t = Objects.requireNonNull(text, "text").strip().toUpperCase(Locale.ROOT);
    try {
      if (t.length() >= 2 && (t.charAt(0) == 'I' || t.charAt(0) == 'D')
          && (t.charAt(1) == 'P' || t.charAt(1) == 'B')) {
        Reception r = t.charAt(1) == 'P' ? Reception.POLL : Reception.BLOCK;
        if (t.charAt(0) == 'I' && t.length() == 2) {
          return inline(r);
        }
        if (t.charAt(0) == 'D' && t.length() > 2) {
          return dispatch(r, Integer.parseInt(t.substring(2)));
        }
      }
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a threading model: '" + text + "' (" + e.getMessage()
          + "); expected IP, IB, DPn or DBn, e.g. DB8", e);
    }
    throw new IllegalArgumentException("not a threading model: '" + text
        + "'; expected IP, IB, DPn or DBn, e.g. DB8");
  }
}
