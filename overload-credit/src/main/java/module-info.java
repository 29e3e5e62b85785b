/** Breakwater's and Protego's credit controllers, and the default scheme {@code Spillway}. */
module io.spillway.credit {
  requires transitive io.spillway.api;

  exports io.spillway.credit;
}
