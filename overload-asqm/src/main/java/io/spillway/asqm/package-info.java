/**
 * Protego's Active Synchronization Queue Management and the queueing stage under it.
 *
 * <ul>
 *   <li>{@link io.spillway.asqm.BudgetedLock} and {@link io.spillway.asqm.BudgetedCondition}:
 *       drop-in {@link java.util.concurrent.locks.Lock} / {@link
 *       java.util.concurrent.locks.Condition} implementations that measure their oldest waiter's
 *       queueing delay and refuse a request whose remaining {@link io.spillway.api.RequestBudget}
 *       the expected wait exceeds (protego-nsdi23 §3.2, §4; for locks the wait also counts the
 *       queue's length, {@link io.spillway.api.LockWaitRule#QUEUE_AWARE}), throwing {@link
 *       io.spillway.api.BudgetExceededException} in the try-with-resources form.
 *   <li>{@link io.spillway.asqm.CarrierDispatcher}: one virtual thread per request on carriers
 *       whose run queue is stamped, so the carrier-queue delay (breakwater-osdi20 §3.1, §4)
 *       counts every wake-up after a lock or I/O; falls back to a platform pool when the JDK does
 *       not allow a custom scheduler.
 * </ul>
 *
 * <p>Every public type states its thread-safety. Time is injected as a {@link
 * io.spillway.api.Ticker}. This package depends on nothing but the JDK and {@code overload-api}.
 */
package io.spillway.asqm;
