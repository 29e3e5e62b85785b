package io.spillway.kv;

/**
 * One stored key: its metadata on the heap, its value in a slab chunk. Fields are guarded by the
 * item lock of the key's stripe; the LRU links by the class's LRU lock.
 */
final class Item {
  final byte[] key;
  final int hash;
  int flags;
  /** Expiry on the store's ticker; {@code Long.MAX_VALUE}: never. */
  long expiresAt;
  long storedAt;
  long cas;
  int chunk;
  int length;
  int slabClass;
  long lastBump;
  boolean linked;
  Item hashNext;
  Item lruPrev;
  Item lruNext;

  Item(byte[] key, int hash) {
    this.key = key;
    this.hash = hash;
  }
}
