/**
 * The Java overload-control libraries users pick today, run behind Spillway's admission SPI so the
 * simulator and harness compare them side by side with Breakwater and the papers' baselines:
 * Netflix concurrency-limits' Gradient2, Vegas and AIMD limits ({@link
 * io.spillway.peers.NetflixConcurrencyLimit}), and Alibaba Sentinel's system adaptive protection
 * ({@link io.spillway.peers.SentinelSystemProtection}).
 *
 * <p>The Netflix limiters run everywhere: the simulator hands them its virtual time. Sentinel runs
 * on real sockets only (the harness's {@code sentinel} scheme), not in the simulator: its
 * statistics windows and response times read a process-wide millisecond wall clock ({@code
 * TimeUtil}, refreshed by its own thread), its system rule reads the operating system's load and
 * CPU usage on another thread once a second, and its rules and statistics are global static state,
 * so neither an injected ticker nor a simulated server can drive it, and a JVM holds one Sentinel
 * gate at a time. sentinel-core is an optional dependency of this module: an application that runs
 * the Sentinel gate adds it.
 */
package io.spillway.peers;
