package io.spillway.peers;

import com.netflix.concurrency.limits.Limit;

/**
 * The parameters of one of Netflix concurrency-limits' limit algorithms, able to build a fresh
 * {@link Limit} with the library's own builder. One server gate gets one limit.
 *
 * <p>Implementations are immutable records and thread-safe.
 */
public sealed interface NetflixLimitConfig
    permits Gradient2Config, VegasConfig, AimdConfig {

  /** The scheme name the simulator and reports use, e.g. {@code netflix-gradient2}. */
  String schemeName();

  /** A new limit in its initial state, built with the library's builder. */
  Limit newLimit();
}
