package io.spillway.sim;

import io.spillway.api.ClientGate;

/**
 * A client gate's timer in virtual time, as {@link Simulation} and {@link GraphSimulation} run it:
 * while the gate holds requests, one wakeup is pending at its {@link ClientGate#nextWakeupNanos()}
 * (never earlier than the next nanosecond). Asking for a later one keeps the pending one; asking
 * for an earlier one supersedes it, and the superseded event, when it comes, is ignored.
 *
 * <p>Not thread-safe; owned by one client session of one simulation.
 */
final class WakeupTimer {

  private static final long NONE = Long.MIN_VALUE;

  private long at = NONE;

  /**
   * Whether a wakeup event must be scheduled at {@link #at()} (virtual time) for what {@code gate}
   * holds now.
   *
   * @param origin the ticker's value at virtual time 0
   * @param now the virtual time
   */
  boolean arm(ClientGate<?> gate, long origin, long now) {
    if (gate.queued() == 0) {
      return false;
    }
    long next = gate.nextWakeupNanos() - origin;
    if (next <= now) {
      next = now + 1;
    }
    if (at == NONE || next < at) {
      at = next;
      return true;
    }
    return false;
  }

  /** The virtual time of the pending wakeup. */
  long at() {
    return at;
  }

  /**
   * Whether a wakeup event scheduled for {@code time} is the pending one (and disarms it); false
   * if an earlier wakeup superseded it.
   */
  boolean fire(long time) {
    if (at != time) {
      return false;
    }
    at = NONE;
    return true;
  }
}
