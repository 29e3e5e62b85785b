package io.spillway.harness.graph;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.grpc.EventLoopProbe;
import io.spillway.harness.graph.proto.GraphReply;
import io.spillway.harness.graph.proto.GraphRequest;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Scenario;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * One service of a call graph: a gRPC server on its own loopback port, with its own pool of
 * {@code workers} threads fed by its own timestamped FIFO (so each service has its own queue and
 * queueing delay, rajomon-nsdi25 §3.1), serving the method of every interface it takes part in.
 *
 * <p>A call is decided on where it arrives: gRPC runs the server's interceptors (the scheme's
 * gate) and the call's listener on the transport thread that decoded its headers
 * ({@code directExecutor}), and only an admitted call's handler enters the workers' FIFO. That is
 * the request path of docs/design.md ("decode, drop now, then dispatch"), and the one the
 * simulator models. With the workers as gRPC's executor instead, every call, a rejected one too,
 * would wait in the FIFO behind the admitted calls' compute before its gate saw it: rejects then
 * took as long as the queue (26–31 ms at a 2 ms price threshold) and held a place in it.
 *
 * <p>A service's queueing delay, the signal its gate reads, is the sum of two stages: the backlog
 * of gRPC's event loops, which every service of the process shares ({@link EventLoopProbe}), and
 * its own workers' FIFO.
 *
 * <p>On a worker a call spins for the node's sampled compute time ({@link CpuSpin}), then
 * calls the node's callees in parallel with the same method on asynchronous stubs and returns,
 * freeing the worker; the reply is sent from whichever thread completes the last callee call,
 * carrying how many nodes computed for it. A callee's failure fails the call at once with the
 * callee's status (code and description, not its trailers, which belong to the callee's hop); the
 * other callees' calls run on, as sub-requests of a failed request do in a real application —
 * cutting that waste is what Rajomon's shared tokens are for (§3.2).
 *
 * <p>Lifecycle: {@link #start}, then {@link #connect} once every service of the graph listens,
 * then calls, then {@link #close}. Thread-safe once connected.
 */
final class GraphService implements AutoCloseable {

  private final CallGraph graph;
  private final CallGraph.Service service;
  /** The method this service serves for each interface, null where it takes no part; by interface id. */
  private final List<MethodDescriptor<GraphRequest, GraphReply>> served;
  /** The method each callee serves for each interface, by interface id, then callee service name. */
  private final List<Map<String, MethodDescriptor<GraphRequest, GraphReply>>> calleeMethods;
  private final CarrierDispatcher workers;
  private final EventLoopProbe eventLoops;
  private final GraphWiring.ServiceWiring wiring;
  /** The node this service is in each interface, null where it takes no part; by interface id. */
  private final CallGraph.Node[] nodes;
  private final LongAdder[] computed;
  private final LongAdder[] failed;
  private final ThreadLocal<SplittableRandom> random;
  private final Map<String, Channel> callees = new LinkedHashMap<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private Server server;

  GraphService(CallGraph graph, CallGraph.Service service, GraphWiring wiring, Scenario scenario,
      Ticker ticker, Scheduler scheduler, EventLoopProbe eventLoops, long seed) {
    this.graph = graph;
    this.service = service;
    int n = graph.interfaces().size();
    this.nodes = new CallGraph.Node[n];
    this.computed = new LongAdder[n];
    this.failed = new LongAdder[n];
    List<MethodDescriptor<GraphRequest, GraphReply>> served = new ArrayList<>();
    List<Map<String, MethodDescriptor<GraphRequest, GraphReply>>> calleeMethods = new ArrayList<>();
    List<MethodDescriptor<GraphRequest, GraphReply>> mine = new ArrayList<>();
    for (CallGraph.Interface i : graph.interfaces()) {
      Map<String, MethodDescriptor<GraphRequest, GraphReply>> byCallee = new LinkedHashMap<>();
      MethodDescriptor<GraphRequest, GraphReply> method = null;
      for (CallGraph.Node node : i.nodes()) {
        if (node.service().equals(service)) {
          nodes[i.index()] = node;
          method = GraphMethods.at(i, node);
          mine.add(method);
          for (CallGraph.Node callee : node.callees()) {
            byCallee.put(callee.service().name(), GraphMethods.at(i, callee));
          }
        }
      }
      served.add(method);
      calleeMethods.add(byCallee);
      computed[i.index()] = new LongAdder();
      failed[i.index()] = new LongAdder();
    }
    this.served = java.util.Collections.unmodifiableList(served);
    this.calleeMethods = List.copyOf(calleeMethods);
    this.workers = CarrierDispatcher.platform(service.workers(), ticker);
    this.eventLoops = eventLoops;
    this.wiring = wiring.service(new GraphWiring.ServiceSite(service, graph, scenario, List.copyOf(mine),
        ticker, scheduler, QueueDelaySignal.sum(eventLoops, workers.queueDelay())));
    SplittableRandom root = new SplittableRandom(seed * 31 + service.index());
    this.random = ThreadLocal.withInitial(() -> {
      synchronized (root) {
        return root.split();
      }
    });
  }

  /** Starts listening on an ephemeral loopback port. */
  void start() throws IOException {
    // One gRPC service definition per service name: the public one where this service is an
    // interface's root, its own (GraphMethods.INNER_PREFIX) where it is a callee.
    Map<String, ServerServiceDefinition.Builder> definitions = new LinkedHashMap<>();
    for (CallGraph.Interface i : graph.interfaces()) {
      CallGraph.Node node = nodes[i.index()];
      if (node != null) {
        int id = i.index();
        MethodDescriptor<GraphRequest, GraphReply> method = served.get(id);
        definitions.computeIfAbsent(method.getServiceName(), ServerServiceDefinition::builder)
            .addMethod(method, ServerCalls.asyncUnaryCall(
                (GraphRequest request, StreamObserver<GraphReply> out) -> handle(id, node, request, out)));
      }
    }
    NettyServerBuilder builder = NettyServerBuilder
        .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .directExecutor(); // interceptors and listeners on the transport thread; handle dispatches
    for (ServerServiceDefinition.Builder definition : definitions.values()) {
      List<ServerInterceptor> interceptors = new ArrayList<>();
      interceptors.add(eventLoops.interceptor()); // first: it probes the loop, whatever the scheme does
      interceptors.addAll(wiring.serverInterceptors());
      builder.addService(ServerInterceptors.interceptForward(definition.build(), interceptors));
    }
    wiring.extraServices().forEach(builder::addService);
    server = builder.build().start();
  }

  /** Opens one channel to each callee, given every service's port. */
  void connect(Map<String, Integer> ports) {
    for (CallGraph.Node node : nodes) {
      if (node == null) {
        continue;
      }
      for (CallGraph.Node callee : node.callees()) {
        String name = callee.service().name();
        if (!callees.containsKey(name)) {
          ManagedChannel channel = NettyChannelBuilder
              .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), ports.get(name)))
              .usePlaintext()
              .directExecutor()
              .build();
          channels.add(channel);
          callees.put(name, ClientInterceptors.interceptForward(channel, wiring.downstream(callee.service())));
        }
      }
    }
  }

  int port() {
    return server.getPort();
  }

  CallGraph.Service service() {
    return service;
  }

  /** How many calls of interface {@code iface} this service has computed for. */
  long computed(int iface) {
    return computed[iface].sum();
  }

  /** How many calls of interface {@code iface} this service failed because a callee failed. */
  long failed(int iface) {
    return failed[iface].sum();
  }

  /** How many calls this service has handed to its workers: one per admitted call. */
  long dispatched() {
    return workers.submissions();
  }

  /** Whether this service takes part in interface {@code iface}. */
  boolean serves(int iface) {
    return nodes[iface] != null;
  }

  private void handle(int iface, CallGraph.Node node, GraphRequest request, StreamObserver<GraphReply> out) {
    // Replies may be sent after the caller gave up; without a handler that would throw on the
    // callee channel's thread.
    ((ServerCallStreamObserver<GraphReply>) out).setOnCancelHandler(() -> { });
    Runnable work = Context.current().wrap(() -> {
      try {
        compute(iface, node, request, out);
      } catch (RuntimeException e) { // before any reply or callee call: off gRPC's threads nobody
        // else would end the call
        out.onError(Status.INTERNAL.withDescription(service.name() + ": " + e).withCause(e).asRuntimeException());
      }
    });
    try {
      workers.execute(work);
    } catch (RejectedExecutionException e) { // closing: the call still ends, once
      out.onError(Status.UNAVAILABLE.withDescription(service.name() + " is shutting down").asRuntimeException());
    }
  }

  /** A call's work on a worker: its compute, then its callees (or its reply, at a leaf). */
  private void compute(int iface, CallGraph.Node node, GraphRequest request, StreamObserver<GraphReply> out) {
    CpuSpin.spin(node.compute().sample(random.get()));
    computed[iface].increment();
    if (node.callees().isEmpty()) {
      out.onNext(GraphReply.newBuilder().setId(request.getId()).setNodes(1).build());
      out.onCompleted();
      return;
    }
    FanOut fanOut = new FanOut(iface, request.getId(), node.callees().size(), out);
    for (CallGraph.Node callee : node.callees()) {
      String name = callee.service().name();
      try {
        ClientCalls.asyncUnaryCall(callees.get(name).newCall(calleeMethods.get(iface).get(name),
            CallOptions.DEFAULT), request, fanOut);
      } catch (RuntimeException e) { // the fan-out answers the call, once, whatever its callees do
        fanOut.onError(e);
        return;
      }
    }
  }

  /** Collects the callees' replies to one call; answers it once, when the last arrives or one fails. */
  private final class FanOut implements StreamObserver<GraphReply> {
    private final int iface;
    private final long id;
    private final StreamObserver<GraphReply> out;
    private final AtomicInteger remaining;
    private final AtomicInteger nodesBelow = new AtomicInteger();
    private final AtomicBoolean answered = new AtomicBoolean();

    FanOut(int iface, long id, int callees, StreamObserver<GraphReply> out) {
      this.iface = iface;
      this.id = id;
      this.out = out;
      this.remaining = new AtomicInteger(callees);
    }

    @Override
    public void onNext(GraphReply reply) {
      nodesBelow.addAndGet(reply.getNodes());
    }

    @Override
    public void onError(Throwable t) {
      if (answered.compareAndSet(false, true)) {
        failed[iface].increment();
        Status status = Status.fromThrowable(t);
        out.onError(status.asRuntimeException());
      }
    }

    @Override
    public void onCompleted() {
      if (remaining.decrementAndGet() == 0 && answered.compareAndSet(false, true)) {
        out.onNext(GraphReply.newBuilder().setId(id).setNodes(nodesBelow.get() + 1).build());
        out.onCompleted();
      }
    }
  }

  /** Stops serving (calls in flight are cancelled), then closes the wiring, the callee channels, the workers. */
  @Override
  public void close() {
    try {
      if (server != null) {
        server.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
      }
      wiring.close(); // before the channels: sessions with callees deregister over them
      for (ManagedChannel channel : channels) {
        channel.shutdown(); // calls already started (a deregistration) may finish
      }
      for (ManagedChannel channel : channels) {
        if (!channel.awaitTermination(1, TimeUnit.SECONDS)) {
          channel.shutdownNow().awaitTermination(1, TimeUnit.SECONDS);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      channels.forEach(ManagedChannel::shutdownNow);
    } finally {
      workers.close();
    }
  }

  @Override
  public String toString() {
    return service.name() + "(" + service.workers() + " worker" + (service.workers() == 1 ? "" : "s")
        + (server != null ? ", port " + server.getPort() : "") + ")";
  }
}
