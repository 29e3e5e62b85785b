package io.spillway.api.internal;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Client session ids (docs/design.md: "Session ids are generated, not chosen"). Ids are
 * unique within a process (a counter) and unlikely to collide across processes: the counter
 * starts at a random point of the 2^63 positive longs, and each id is the counter's value run
 * through a bijective mix, so ids of one process are not adjacent to another's. Zero, which means
 * "no session", is never returned.
 *
 * <p>Used by every client transport (gRPC sessions, HTTP sessions) so that ids mean the same
 * everywhere. Thread-safe.
 */
public final class SessionIds {

  private static final AtomicLong NEXT = new AtomicLong(new SecureRandom().nextLong());

  private SessionIds() { }

  /** A fresh positive session id. */
  public static long next() {
    while (true) {
      long id = mix(NEXT.getAndIncrement()) & Long.MAX_VALUE;
      if (id != 0) {
        return id;
      }
    }
  }

  /** A bijection on 64-bit values (the SplitMix64 finaliser): distinct inputs, distinct outputs. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }
}
