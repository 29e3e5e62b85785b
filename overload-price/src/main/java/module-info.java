/** Rajomon: client token wallets and per-interface prices across a call graph. */
module io.spillway.price {
  requires transitive io.spillway.api;

  exports io.spillway.price;
}
