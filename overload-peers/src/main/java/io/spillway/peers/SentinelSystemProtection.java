package io.spillway.peers;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import java.util.Objects;

/**
 * {@code sentinel}: Alibaba Sentinel 1.8.9's system adaptive protection as a service deploys it to
 * protect itself from overload: every request is an inbound ({@code EntryType.IN}) entry of one
 * resource, checked against one {@code SystemRule} ({@link SentinelSystemConfig}, by default the
 * documented load trigger of 2.5 × cores). A refused request gets a fast {@code REJECTED_LIMIT};
 * clients send at once and expire at the SLO. See {@link SentinelServerGate} for the enforcement.
 *
 * <p>Needs {@code com.alibaba.csp:sentinel-core} on the class path (an optional dependency of
 * this module). Sentinel keeps its rules and statistics in static state, so a JVM runs at most one
 * Sentinel gate at a time: {@link #newServerGate} throws {@link IllegalStateException} while
 * another is open. Sentinel reads its own millisecond wall clock (its statistics windows, its
 * response times) and samples the system load and CPU usage on its own thread once a second, so
 * this scheme runs on real sockets only, never in the simulator's virtual time.
 *
 * <p>Immutable and thread-safe.
 */
public final class SentinelSystemProtection implements OverloadScheme {

  /*
   * What Sentinel decides (SystemRuleManager.checkSystem, sentinel-core 1.8.9), for an inbound entry
   * with the load trigger set, as its "Adaptive System Protection" page describes it
   * (https://github.com/alibaba/Sentinel/wiki/Adaptive-System-Protection):
   *
   *   refuse  iff  load1 > highestSystemLoad  and  n > 1  and  n > maxSuccessQps · minRt / 1000
   *
   * n is the number of inbound entries in flight in the JVM (Constants.ENTRY_NODE's "thread"
   * count, which counts entries, not threads); maxSuccessQps is the most completions in one of
   * the two 500 ms buckets of the last second, times two; minRt the least response time in those
   * buckets, in whole milliseconds and at least 1. The product is a bandwidth-delay product, as in
   * TCP BBR: the in-flight count the server can sustain at its best observed rate and latency.
   * load1 only arms the check, and is read once a second from the operating system's one-minute
   * load average (OperatingSystemMXBean.getSystemLoadAverage): it is machine-wide, and counts
   * runnable threads, not queued requests. With the CPU-usage trigger set, every inbound entry is
   * refused while max(process, system) CPU usage, sampled once a second, exceeds it.
   *
   * Two consequences at the microsecond scale of Spillway's scenarios, stated here because they
   * decide what the harness measures: response times shorter than a millisecond round to 0 and
   * minRt to 1 ms, so the estimate admits about one millisecond of the best observed throughput;
   * and a server whose backlog waits in a queue (an event loop, virtual threads) keeps one runnable
   * thread per core however deep the queue, so its overload does not raise load1 by itself.
   */

  private final SentinelSystemConfig config;

  private SentinelSystemProtection(SentinelSystemConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** Sentinel with the given thresholds. */
  public static SentinelSystemProtection of(SentinelSystemConfig config) {
    return new SentinelSystemProtection(config);
  }

  /** Sentinel with its documented defaults for this JVM's cores ({@link SentinelSystemConfig#defaults()}). */
  public static SentinelSystemProtection defaults() {
    return of(SentinelSystemConfig.defaults());
  }

  @Override
  public String name() {
    return "sentinel";
  }

  /** The thresholds this scheme runs with. */
  public SentinelSystemConfig config() {
    return config;
  }

  /**
   * A gate that loads this scheme's {@code SystemRule} into Sentinel, replacing any system rules
   * loaded before; closing it clears them.
   *
   * @throws IllegalStateException if another Sentinel gate is open in this JVM
   */
  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    return new SentinelServerGate(config, environment);
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return ClientGate.sendAtOnce(environment);
  }

  @Override
  public String toString() {
    return name() + " " + config;
  }
}
