package io.spillway.harness.grpcdemo;

import io.grpc.stub.StreamObserver;
import io.spillway.asqm.BudgetedLock;
import io.spillway.harness.graph.CpuSpin;
import io.spillway.harness.grpcdemo.proto.DemoGrpc;
import io.spillway.harness.grpcdemo.proto.WorkReply;
import io.spillway.harness.grpcdemo.proto.WorkRequest;

/**
 * The demo's sample service, as a team would write it: one unary method whose handler takes a
 * shared lock (a {@link BudgetedLock}, the one line a team changes to get ASQM) and computes for a
 * fixed CPU time inside it ({@link CpuSpin}: CPU time, so a preempted handler still costs what it
 * says), then, where a block is given, waits that long with no lock held, as a handler that calls a
 * downstream service or a database does (its thread sleeps; a virtual thread gives up its carrier).
 * Thread-safe.
 */
final class DemoService extends DemoGrpc.DemoImplBase {

  private final BudgetedLock lock = new BudgetedLock();
  private final long serviceNanos;
  private final long blockNanos;

  DemoService(long serviceNanos, long blockNanos) {
    this.serviceNanos = serviceNanos;
    this.blockNanos = blockNanos;
  }

  @Override
  public void work(WorkRequest request, StreamObserver<WorkReply> responses) {
    try (var held = lock.acquireWithinBudget()) {
      CpuSpin.spin(serviceNanos);
    }
    if (blockNanos > 0) {
      try {
        Thread.sleep(java.time.Duration.ofNanos(blockNanos));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        responses.onError(io.grpc.Status.CANCELLED.withDescription("interrupted").asRuntimeException());
        return;
      }
    }
    responses.onNext(WorkReply.newBuilder().setId(request.getId()).build());
    responses.onCompleted();
  }
}
