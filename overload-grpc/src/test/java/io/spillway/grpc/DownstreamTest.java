package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.BreakwaterServerGate;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A two-hop call graph in process: client → frontend → backend. The frontend's handler calls the
 * backend through the downstream interceptor.
 */
class DownstreamTest {

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000);
  private final InterfaceRegistry frontInterfaces = InterfaceRegistry.of(Echo.DESCRIPTOR);
  private final InterfaceRegistry callees = new InterfaceRegistry();
  private final ScriptedGate frontGate = new ScriptedGate();
  private InProcess backend;
  private InProcess frontend;

  @AfterEach
  void close() {
    if (frontend != null) {
      frontend.close();
    }
    if (backend != null) {
      backend.close();
    }
  }

  /** The frontend: its Unary method calls the backend's Other and answers with what it got. */
  private Channel frontend(Channel toBackend) {
    Echo.Handler handler = (method, request, out) ->
        Calls.unary(toBackend, Echo.OTHER, "sub:" + request).reply().whenComplete((reply, error) -> {
          if (reply.status().isOk()) {
            out.onNext(reply.body());
            out.onCompleted();
          } else {
            out.onError(reply.status().asRuntimeException());
          }
        });
    frontend = new InProcess(ServerInterceptors.intercept(Echo.service(handler),
        new SpillwayServerInterceptor(frontGate, clock, frontInterfaces, ControlChannel.DISCARD)));
    return frontend.channel();
  }

  @Test
  void subRequestsCarryTheTokensAndTheCalleesPriceReachesTheCallGraphGate() {
    ScriptedGate backGate = new ScriptedGate();
    backGate.decide = request -> request.tokens() >= 50
        ? io.spillway.api.Status.OK : io.spillway.api.Status.REJECTED_PRICE;
    backGate.fill = (request, response) -> response.price(7);
    backend = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
        new SpillwayServerInterceptor(backGate, clock)));
    Channel toBackend = ClientInterceptors.intercept(backend.channel(),
        SpillwayGrpc.downstream().callees(callees).ticker(clock).build());
    Channel toFrontend = frontend(toBackend);

    Calls.Reply rich = Calls.unary(toFrontend, Echo.UNARY, Calls.headers(
        SpillwayMetadata.TOKENS, 100, SpillwayMetadata.PRIORITY, 3, SpillwayMetadata.BUDGET, 8_000), "x").await();
    assertEquals("echo:sub:x", rich.body());
    assertEquals(100, backGate.last().tokens(), "the sub-request carries the request's tokens");
    assertEquals(3, backGate.last().priority(), "and its priority");
    assertEquals(8_000, backGate.last().budgetNanos(), "and what is left of its budget");

    Calls.Reply poor = Calls.unary(toFrontend, Echo.UNARY, Calls.headers(SpillwayMetadata.TOKENS, 10), "y").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, poor.status().getCode());
    assertEquals("spillway: rejected (price 7)", poor.status().getDescription());

    int front = frontInterfaces.idOf(Echo.UNARY);
    int callee = callees.idOf(Echo.OTHER);
    long now = clock.read();
    assertEquals(List.of(
        new ScriptedGate.Downstream(front, callee, io.spillway.api.Status.OK, 7, now),
        new ScriptedGate.Downstream(front, callee, io.spillway.api.Status.REJECTED_PRICE, 7, now)),
        frontGate.downstream, "the inbound gate sees every answer of its callee, rejects included");

    Calls.Reply direct = Calls.unary(toBackend, Echo.OTHER, Calls.headers(SpillwayMetadata.TOKENS, 60), "z").await();
    assertEquals("echo:z", direct.body(), "outside a Spillway call the interceptor passes through");
    assertEquals(2, frontGate.downstream.size());
  }

  /**
   * A call made while serving a request that came by other means than gRPC (an HTTP request whose
   * filter bound its budget) carries what is left of that budget; without one, nothing.
   */
  @Test
  void outsideAGrpcCallTheBudgetInScopeIsCarried() {
    ScriptedGate backGate = new ScriptedGate();
    backend = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
        new SpillwayServerInterceptor(backGate, clock)));
    Channel toBackend = ClientInterceptors.intercept(backend.channel(),
        SpillwayGrpc.downstream().callees(callees).ticker(clock).build());
    io.spillway.api.RequestBudget budget = io.spillway.api.RequestBudget.of(7_000_000);
    Calls.Reply withBudget = ScopedValue.where(io.spillway.api.RequestBudget.CURRENT, budget)
        .call(() -> Calls.unary(toBackend, Echo.OTHER, "x").await());
    assertEquals(Status.Code.OK, withBudget.status().getCode());
    assertEquals(7_000_000, backGate.last().budgetNanos());

    Calls.Reply ownBudget = ScopedValue.where(io.spillway.api.RequestBudget.CURRENT, budget)
        .call(() -> Calls.unary(toBackend, Echo.OTHER, Calls.headers(SpillwayMetadata.BUDGET, 5), "y")
            .await());
    assertEquals(Status.Code.OK, ownBudget.status().getCode());
    assertEquals(5, backGate.last().budgetNanos(), "a budget the application set wins");

    Calls.unary(toBackend, Echo.OTHER, "z").await();
    assertEquals(Long.MAX_VALUE, backGate.last().budgetNanos(), "no budget in scope: none sent");
  }

  /**
   * A frontend that passes its callee's failure on as it came (the stub's exception, trailers and
   * all, as {@code responseObserver.onError(e)} does) answers its own caller with its own Spillway
   * fields only: the callee's credit delta, credit id and price are the frontend's session with
   * the callee, and read by the frontend's caller they would move that caller's window with the
   * frontend. The callee's pushback is kept: it is when the work behind the frontend can be tried
   * again.
   */
  @Test
  void aCalleesSpillwayTrailersPassedOnByTheHandlerAreNotTheFrontendsAnswer() {
    ScriptedGate backGate = new ScriptedGate();
    backGate.decide = request -> io.spillway.api.Status.REJECTED_AQM;
    backGate.fill = (request, response) -> response.creditDelta(-1).creditId(42).price(7).threshold(3);
    backend = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
        new SpillwayServerInterceptor(backGate, clock, new InterfaceRegistry(), ControlChannel.DISCARD,
            now -> 9_000_000L, SpillwayServerInterceptor.NO_TARGET)));
    Channel toBackend = ClientInterceptors.intercept(backend.channel(),
        SpillwayGrpc.downstream().callees(callees).ticker(clock).build());
    Echo.Handler passOn = (method, request, out) ->
        Calls.unary(toBackend, Echo.OTHER, request).reply().whenComplete((reply, error) ->
            out.onError(reply.status().asRuntimeException(reply.trailers())));
    frontend = new InProcess(ServerInterceptors.intercept(Echo.service(passOn),
        new SpillwayServerInterceptor(frontGate, clock, frontInterfaces, ControlChannel.DISCARD)));

    Calls.Reply reply = Calls.unary(frontend.channel(), Echo.UNARY, "x").await();

    assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode(), reply.toString());
    assertEquals(List.of("9"), values(reply, SpillwayServerInterceptor.RETRY_PUSHBACK_MS),
        "the callee's pushback reaches the frontend's caller");
    assertEquals(List.of(Integer.toString(io.spillway.api.Status.FAILED.code())),
        values(reply, SpillwayMetadata.STATUS), "one status, the frontend's");
    assertEquals(List.of(), values(reply, SpillwayMetadata.CREDIT_DELTA), "the callee's credit delta");
    assertEquals(List.of(), values(reply, SpillwayMetadata.CREDIT_ID));
    assertEquals(List.of(), values(reply, SpillwayMetadata.PRICE));
    assertEquals(List.of(), values(reply, SpillwayMetadata.THRESHOLD));
  }

  private static List<String> values(Calls.Reply reply, io.grpc.Metadata.Key<String> key) {
    Iterable<String> all = reply.trailers().getAll(key);
    List<String> list = new java.util.ArrayList<>();
    if (all != null) {
      all.forEach(list::add);
    }
    return list;
  }

  /** {@code breakwater-d}: the frontend is also a Breakwater client of the backend. */
  @Test
  void aPerCalleeSessionQueuesSubRequestsInItsOwnGate() {
    OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(1_000_000, 50_000));
    HeaderRecorder recorder = new HeaderRecorder();
    try (SpillwayGrpcServer backSpillway = SpillwayGrpc.server(breakwater).ticker(clock)
        .scheduler(clock).parallelism(1).queueDelay(QueueDelaySignal.NONE).build()) {
      backend = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
          backSpillway.interceptor(), recorder), backSpillway.controlService());
      SpillwayClientInterceptor perCallee = SpillwayGrpc.client(breakwater).sessionId(77)
          .sloNanos(1_000_000).ticker(clock).scheduler(clock).interfaces(callees).build();
      Channel toBackend = ClientInterceptors.intercept(backend.channel(), SpillwayGrpc.downstream()
          .callees(callees).ticker(clock).perCalleeSession(perCallee).build());
      Channel toFrontend = frontend(toBackend);

      for (int i = 0; i < 3; i++) {
        Calls.Reply reply = Calls.unary(toFrontend, Echo.UNARY,
            Calls.headers(SpillwayMetadata.TOKENS, 100, SpillwayMetadata.SESSION, 5), "r" + i).await();
        assertEquals("echo:sub:r" + i, reply.body());
      }

      assertEquals("77", recorder.headers.get(0).get(SpillwayMetadata.SESSION),
          "the frontend's own session with the backend, not the client's");
      assertEquals("1", recorder.headers.get(0).get(SpillwayMetadata.FLAGS), "the first sub-request registers");
      assertTrue(recorder.headers.stream().allMatch(h -> "100".equals(h.get(SpillwayMetadata.TOKENS))));
      assertEquals(1, ((BreakwaterServerGate) backSpillway.gate()).sessionCount());
      assertEquals(3, frontGate.downstream.size(), "Breakwater's answers are reported too");
      perCallee.close();
      assertEquals(0, ((BreakwaterServerGate) backSpillway.gate()).sessionCount());
    }
  }
}
