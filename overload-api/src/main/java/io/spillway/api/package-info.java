/**
 * Spillway's SPI: the vocabulary every overload-control mechanism speaks.
 *
 * <ul>
 *   <li>Time is injected: {@link io.spillway.api.Ticker} and {@link io.spillway.api.Scheduler}.
 *   <li>The overload signal is queueing delay: {@link io.spillway.api.QueueDelaySignal}, kept by
 *       {@link io.spillway.api.TimestampedQueue} and summed over stages.
 *   <li>Admission is split into a server side ({@link io.spillway.api.ServerGate}, handing out
 *       {@link io.spillway.api.ServerPermit}s that end exactly once) and a client side
 *       ({@link io.spillway.api.ClientGate}, a queue that expires requests at their SLO); a named
 *       {@link io.spillway.api.OverloadScheme} makes both.
 *   <li>What travels on the wire: {@link io.spillway.api.RequestMetadata},
 *       {@link io.spillway.api.ResponseMetadata}, {@link io.spillway.api.Status}.
 *   <li>A request's queueing budget: {@link io.spillway.api.RequestBudget}, carried in a
 *       {@code ScopedValue}.
 * </ul>
 *
 * <p>This package depends on nothing but the JDK.
 */
package io.spillway.api;
