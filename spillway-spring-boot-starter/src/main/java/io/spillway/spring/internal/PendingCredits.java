package io.spillway.spring.internal;

import io.spillway.api.ResponseMetadata;
import java.io.ByteArrayOutputStream;
import java.util.Arrays;

/**
 * The explicit credits a session's stream has not written yet, merged per gate: the sum of their
 * deltas and the newest of their stamped windows ({@link ResponseMetadata#isNewerCredit}). A
 * client that does not read, or reads slowly, would otherwise make its server hold every credit
 * sent to it; merged, what waits is one entry per gate, however many credits arrive meanwhile.
 *
 * <p>Nothing is lost by the merge. Deltas are signed changes of one window, so a client that
 * applies their sum ends where it would have by applying each. A stamped window is the window
 * after its message's change, and a client that reads stamps takes the newest it sees and ignores
 * older ones (ResponseMetadata's class comment), so of the stamps only the newest matters: the
 * others describe windows the newest supersedes. This is what the gRPC transport's credit stream
 * does while its call is not ready ({@code SpillwayControlService}).
 *
 * <p>Not thread-safe: its stream guards it.
 */
final class PendingCredits {

  /** Per gate index: the sum of the deltas not written. */
  private long[] deltas = new long[1];
  /** Per gate index: the newest stamped window not written, and its stamp (0: none). */
  private int[] windows = new int[1];
  private long[] seqs = new long[1];
  /** Gates with something to write. */
  private int pending;

  /**
   * Adds gate {@code endpoint}'s credit of {@code delta}, stamped with the window after it and
   * {@code seq} unless {@code seq} is 0.
   */
  void add(int endpoint, int delta, int window, long seq) {
    if (endpoint >= deltas.length) {
      int n = Math.max(endpoint + 1, deltas.length * 2);
      deltas = Arrays.copyOf(deltas, n);
      windows = Arrays.copyOf(windows, n);
      seqs = Arrays.copyOf(seqs, n);
    }
    boolean was = isPending(endpoint);
    deltas[endpoint] += delta;
    if (ResponseMetadata.isNewerCredit(seq, seqs[endpoint])) {
      windows[endpoint] = window;
      seqs[endpoint] = seq;
    }
    boolean is = isPending(endpoint);
    if (was != is) {
      pending += is ? 1 : -1;
    }
  }

  private boolean isPending(int endpoint) {
    return deltas[endpoint] != 0 || seqs[endpoint] != 0;
  }

  /** Whether nothing waits to be written. */
  boolean isEmpty() {
    return pending == 0;
  }

  /** Gates with something to write: what this holds, in events. */
  int gates() {
    return pending;
  }

  /** Drops what waits. */
  void clear() {
    Arrays.fill(deltas, 0);
    Arrays.fill(seqs, 0);
    pending = 0;
  }

  /**
   * Takes what waits as the events that carry it ({@link HttpCreditStreams#event}), one per gate
   * (more for a sum beyond an int), or {@code null} if nothing does.
   */
  byte[] take() {
    if (pending == 0) {
      return null;
    }
    ByteArrayOutputStream events = new ByteArrayOutputStream();
    for (int i = 0; i < deltas.length; i++) {
      if (!isPending(i)) {
        continue;
      }
      long left = deltas[i];
      // a sum beyond an int goes in several events; the stamp rides on the last, so that a
      // client that takes the window from it applies no delta after it
      while (left > Integer.MAX_VALUE || left < Integer.MIN_VALUE) {
        int part = (int) Math.clamp(left, Integer.MIN_VALUE, Integer.MAX_VALUE);
        events.writeBytes(HttpCreditStreams.event(i, part, 0, 0));
        left -= part;
      }
      events.writeBytes(HttpCreditStreams.event(i, (int) left, windows[i], seqs[i]));
      deltas[i] = 0;
      windows[i] = 0;
      seqs[i] = 0;
    }
    pending = 0;
    return events.toByteArray();
  }
}
