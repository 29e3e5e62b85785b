package io.spillway.examples.spring;

import io.grpc.stub.StreamObserver;
import io.spillway.examples.spring.proto.InventoryGrpc;
import io.spillway.examples.spring.proto.ReserveReply;
import io.spillway.examples.spring.proto.ReserveRequest;
import org.springframework.stereotype.Service;

/**
 * The gRPC endpoint ({@code spillway.inventory.Inventory/Reserve}, src/main/proto/inventory.proto)
 * over the same service layer as the REST one. Spring gRPC registers it on its own server (port
 * {@code spring.grpc.server.port}); the Spillway starter protects that server through overload-grpc
 * (decided on the transport thread; a gRPC deadline becomes the call's budget), so a budget abort
 * thrown here reaches the client as {@code RESOURCE_EXHAUSTED} with a retry pushback. Thread-safe.
 */
@Service
class InventoryGrpcService extends InventoryGrpc.InventoryImplBase {

  private final InventoryService inventory;

  InventoryGrpcService(InventoryService inventory) {
    this.inventory = inventory;
  }

  @Override
  public void reserve(ReserveRequest request, StreamObserver<ReserveReply> responses) {
    InventoryService.Reservation r = inventory.reserve(request.getSku());
    responses.onNext(ReserveReply.newBuilder().setRemaining(r.remaining()).build());
    responses.onCompleted();
  }
}
