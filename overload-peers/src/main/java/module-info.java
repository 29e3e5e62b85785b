/**
 * The Java peers behind the SPI: Netflix concurrency-limits (Gradient2, Vegas, AIMD) and Alibaba
 * Sentinel's system adaptive protection. Neither library has a module name of its own; each is
 * required by the automatic name its jar file gives it. Sentinel is required {@code static}: it is
 * an optional dependency, present only where an application runs {@code SentinelSystemProtection}
 * (on the module path such an application adds {@code sentinel.core} itself).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module io.spillway.peers {
  requires transitive io.spillway.api;
  requires concurrency.limits.core;
  requires static sentinel.core;

  exports io.spillway.peers;
}
