package io.spillway.credit;

import java.util.concurrent.locks.StampedLock;

/**
 * Sessions by id without boxing: a fixed number of stripes, each an open-addressing table of
 * {@code long} keys guarded by its own {@link StampedLock}. Lookups, the per-request operation,
 * try an optimistic read first and take no lock when no writer interferes; registration and
 * deregistration lock one stripe. Costs O(1) per operation whatever the number of sessions, and
 * allocates nothing on lookup (a {@code ConcurrentHashMap<Long, V>} boxes every id above 127).
 *
 * <p>Thread-safe.
 *
 * @param <V> the session type
 */
final class SessionTable<V> {

  private static final int STRIPES = 64;
  /** A stripe's first table size; it doubles once more than half full. */
  static final int INITIAL_CAPACITY = 16;
  private final Stripe<V>[] stripes;

  @SuppressWarnings("unchecked")
  SessionTable() {
    stripes = new Stripe[STRIPES];
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new Stripe<>();
    }
  }

  /** The hash of {@code key}: its top 6 bits pick the stripe, its low bits the first probe slot. */
  static long mix(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return h ^ (h >>> 32);
  }

  private Stripe<V> stripe(long h) {
    return stripes[(int) (h >>> 58)]; // top 6 bits pick the stripe, the rest index inside it
  }

  V get(long key) {
    long h = mix(key);
    return stripe(h).get(key, h);
  }

  /**
   * Inserts {@code value} unless {@code key} is present, as {@link java.util.Map#putIfAbsent}:
   * returns the existing value, or {@code null} if this call inserted.
   */
  V putIfAbsent(long key, V value) {
    long h = mix(key);
    return stripe(h).putIfAbsent(key, h, value);
  }

  /** Removes and returns the value for {@code key}, or {@code null}. */
  V remove(long key) {
    long h = mix(key);
    return stripe(h).remove(key, h, null);
  }

  /**
   * Removes {@code key} only if it maps to {@code value} (the same object), as {@link
   * java.util.Map#remove(Object, Object)} with identity; whether it did.
   */
  boolean remove(long key, V value) {
    long h = mix(key);
    return stripe(h).remove(key, h, value) != null;
  }

  /**
   * Calls {@code action} with every session present, stripe by stripe. Each stripe's sessions are
   * copied under its read lock and the action runs after it is released, so the action may remove
   * sessions (the lock is not reentrant). Sessions added or removed meanwhile may or may not be seen.
   */
  @SuppressWarnings("unchecked")
  void forEach(java.util.function.Consumer<? super V> action) {
    java.util.ArrayList<Object> batch = new java.util.ArrayList<>();
    for (Stripe<V> stripe : stripes) {
      batch.clear();
      long stamp = stripe.lock.readLock();
      try {
        for (Object v : stripe.values) {
          if (v != null) {
            batch.add(v);
          }
        }
      } finally {
        stripe.lock.unlockRead(stamp);
      }
      for (Object v : batch) {
        action.accept((V) v);
      }
    }
  }

  private static final class Stripe<V> {
    private final StampedLock lock = new StampedLock();
    private long[] keys = new long[INITIAL_CAPACITY];
    private Object[] values = new Object[INITIAL_CAPACITY];
    private int size;

    @SuppressWarnings("unchecked")
    V get(long key, long h) {
      long stamp = lock.tryOptimisticRead();
      if (stamp != 0) {
        long[] k = keys;
        Object[] v = values;
        Object found = find(k, v, key, h);
        if (lock.validate(stamp)) {
          return (V) found;
        }
      }
      stamp = lock.readLock();
      try {
        return (V) find(keys, values, key, h);
      } finally {
        lock.unlockRead(stamp);
      }
    }

    // Linear probing; a null value marks a free slot. Racy reads may see a torn view: the stamp
    // validation above discards any result read while a writer was active.
    private static Object find(long[] k, Object[] v, long key, long h) {
      int mask = k.length - 1;
      if (v.length != k.length) {
        return null;
      }
      for (int i = (int) h & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
        Object value = v[i];
        if (value == null) {
          return null;
        }
        if (k[i] == key) {
          return value;
        }
      }
      return null;
    }

    @SuppressWarnings("unchecked")
    V putIfAbsent(long key, long h, V value) {
      long stamp = lock.writeLock();
      try {
        Object existing = find(keys, values, key, h);
        if (existing != null) {
          return (V) existing;
        }
        if ((size + 1) * 2 > keys.length) {
          resize(keys.length * 2);
        }
        insert(keys, values, key, h, value);
        size++;
        return null;
      } finally {
        lock.unlockWrite(stamp);
      }
    }

    /** Removes {@code key}'s value, if it is {@code expected} or {@code expected} is null. */
    @SuppressWarnings("unchecked")
    V remove(long key, long h, Object expected) {
      long stamp = lock.writeLock();
      try {
        int mask = keys.length - 1;
        int i = (int) h & mask;
        while (values[i] != null && keys[i] != key) {
          i = (i + 1) & mask;
        }
        Object removed = values[i];
        if (removed == null || expected != null && removed != expected) {
          return null;
        }
        values[i] = null;
        size--;
        // Re-insert the rest of the probe run so lookups never stop at the hole.
        for (int j = (i + 1) & mask; values[j] != null; j = (j + 1) & mask) {
          long k = keys[j];
          Object v = values[j];
          values[j] = null;
          insert(keys, values, k, mix(k), v);
        }
        return (V) removed;
      } finally {
        lock.unlockWrite(stamp);
      }
    }

    private void resize(int capacity) {
      long[] oldKeys = keys;
      Object[] oldValues = values;
      long[] newKeys = new long[capacity];
      Object[] newValues = new Object[capacity];
      for (int i = 0; i < oldKeys.length; i++) {
        if (oldValues[i] != null) {
          insert(newKeys, newValues, oldKeys[i], mix(oldKeys[i]), oldValues[i]);
        }
      }
      keys = newKeys;
      values = newValues;
    }

    private static void insert(long[] k, Object[] v, long key, long h, Object value) {
      int mask = k.length - 1;
      int i = (int) h & mask;
      while (v[i] != null) {
        i = (i + 1) & mask;
      }
      k[i] = key;
      v[i] = value;
    }
  }
}
