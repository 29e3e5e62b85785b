/**
 * The Java overload-control libraries users pick today, run behind Spillway's admission SPI so the
 * simulator and harness compare them side by side with Breakwater and the papers' baselines:
 * Netflix concurrency-limits' Gradient2, Vegas and AIMD limits ({@link
 * io.spillway.peers.NetflixConcurrencyLimit}).
 *
 * <p>Alibaba Sentinel is not here: its statistics read a process-wide wall clock ({@code
 * TimeUtil}, refreshed by its own thread) at millisecond resolution and keep global static state,
 * so it cannot run in the simulator's virtual time.
 */
package io.spillway.peers;
