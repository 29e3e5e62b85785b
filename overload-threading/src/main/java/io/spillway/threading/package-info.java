/**
 * µTune (mutune-osdi18): threading models chosen from load. {@link io.spillway.threading.ThreadingModel}
 * names a model, {@link io.spillway.threading.ThreadingProfile} holds its trained tail latency per
 * load, {@link io.spillway.threading.ArrivalRateEstimator} detects the load, {@link
 * io.spillway.threading.ThreadingPolicy} picks a model, and {@link io.spillway.threading.ThreadingAdapter}
 * runs them as a loop against whatever runs the requests (the Netty transport, a gRPC executor, the
 * simulator). Pure policy: time is injected, nothing here starts a thread.
 */
package io.spillway.threading;
