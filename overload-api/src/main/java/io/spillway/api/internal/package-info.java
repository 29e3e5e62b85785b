/**
 * The SPI module's implementation, not its API: helpers that Spillway's own modules share and
 * users never call, the lock-wait estimator behind {@link io.spillway.api.LockWaitRule}, the
 * generator of client session ids, and the reader of a control group's CPU limit behind {@link
 * io.spillway.api.CpuQuotaDelay}. The module exports this package only to {@code
 * io.spillway.asqm} and {@code io.spillway.grpc}; the class-path modules (the simulator, the
 * Spring Boot starter, the harnesses) reach it as the class path allows, and none of it is
 * promised to stay.
 */
package io.spillway.api.internal;
