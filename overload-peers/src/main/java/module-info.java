/**
 * Netflix concurrency-limits (Gradient2, Vegas, AIMD) behind the SPI. concurrency-limits-core has
 * no module name of its own; it is required by the automatic name its jar file gives it.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module io.spillway.peers {
  requires transitive io.spillway.api;
  requires concurrency.limits.core;

  exports io.spillway.peers;
}
