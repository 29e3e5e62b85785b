package io.spillway.price;

import io.spillway.api.InterfaceCall;

/** Interface ids as this module accepts them: small non-negative integers (0 is the default). */
final class Interfaces {

  /** The largest interface id a price table holds; ids index arrays, so they must stay small. */
  static final int MAX_ID = 65_535;

  private Interfaces() { }

  /** The interface a queued request calls: its own, if it says, else 0. */
  static int of(Object request) {
    return request instanceof InterfaceCall call ? check(call.interfaceId()) : 0;
  }

  /** Returns {@code id} if it is in {@code [0, MAX_ID]}. */
  static int check(int id) {
    if (id < 0 || id > MAX_ID) {
      throw new IllegalArgumentException("interface id must be in [0, " + MAX_ID + "], got " + id);
    }
    return id;
  }
}
