package io.spillway.grpc;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.CallGraphGate;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A server gate whose decisions and response fields the test scripts; it records every request,
 * completion, deregistration and downstream report. Also a {@link CallGraphGate}. Thread-safe.
 */
final class ScriptedGate implements ServerGate, CallGraphGate {

  record Downstream(int inboundInterfaceId, int calleeKey, Status status, long price, long now) { }

  final List<RequestMetadata> requests = new CopyOnWriteArrayList<>();
  final List<Outcome> outcomes = new CopyOnWriteArrayList<>();
  final List<Long> deregistered = new CopyOnWriteArrayList<>();
  final List<String> demands = new CopyOnWriteArrayList<>();
  final List<Downstream> downstream = new CopyOnWriteArrayList<>();
  volatile Function<RequestMetadata, Status> decide = r -> Status.OK;
  volatile BiConsumer<RequestMetadata, ResponseMetadata> fill = (req, resp) -> { };

  /** A scheme whose server gate is this one; it makes no client gates. */
  io.spillway.api.OverloadScheme scheme() {
    ScriptedGate gate = this;
    return new io.spillway.api.OverloadScheme() {
      @Override
      public String name() {
        return "scripted";
      }

      @Override
      public ServerGate newServerGate(io.spillway.api.ServerEnvironment e) {
        return gate;
      }

      @Override
      public <R> io.spillway.api.ClientGate<R> newClientGate(io.spillway.api.ClientEnvironment e) {
        throw new UnsupportedOperationException();
      }
    };
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    RequestMetadata copy = copy(request);
    requests.add(copy);
    return new AbstractServerPermit(decide.apply(copy)) {
      @Override
      protected void onComplete(Outcome outcome, long now, ResponseMetadata response) {
        outcomes.add(outcome);
        fill.accept(copy, response);
      }
    };
  }

  @Override
  public void onDemand(long sessionId, int demand, long nowNanos) {
    demands.add(sessionId + ":" + demand);
  }

  @Override
  public void deregister(long sessionId, long nowNanos) {
    deregistered.add(sessionId);
  }

  @Override
  public void onDownstreamResponse(int inboundInterfaceId, int calleeKey, ResponseMetadata response,
      long nowNanos) {
    downstream.add(new Downstream(inboundInterfaceId, calleeKey, response.status(), response.price(),
        nowNanos));
  }

  RequestMetadata last() {
    return requests.get(requests.size() - 1);
  }

  static RequestMetadata copy(RequestMetadata r) {
    return new RequestMetadata().sessionId(r.sessionId()).requestId(r.requestId())
        .demand(r.demand()).creditId(r.creditId()).tokens(r.tokens()).interfaceId(r.interfaceId())
        .budgetNanos(r.budgetNanos()).priority(r.priority()).flags(r.flags());
  }
}
