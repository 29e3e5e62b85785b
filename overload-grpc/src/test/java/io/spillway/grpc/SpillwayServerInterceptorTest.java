package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingServerCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.ControlChannel;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class SpillwayServerInterceptorTest {

  /** Starts near the end of the long range: readings wrap during the test. */
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 500);

  private static String status(Calls.Reply reply) {
    return reply.trailer(SpillwayMetadata.STATUS);
  }

  @Test
  void anAdmittedCallCarriesItsFieldsIntoTheGateAndTheContext() {
    ScriptedGate gate = new ScriptedGate();
    gate.fill = (request, response) -> response.creditDelta(2).price(11);
    AtomicReference<SpillwayContext> seen = new AtomicReference<>();
    AtomicReference<RequestBudget> budget = new AtomicReference<>();
    Echo.Handler handler = (method, request, out) -> {
      seen.set(SpillwayContext.current());
      budget.set(RequestBudget.currentOrNull());
      Echo.ECHO.handle(method, request, out);
    };
    InterfaceRegistry interfaces = InterfaceRegistry.of(Echo.DESCRIPTOR);
    SpillwayServerInterceptor interceptor =
        new SpillwayServerInterceptor(gate, clock, interfaces, ControlChannel.DISCARD);
    try (InProcess grpc = new InProcess(ServerInterceptors.intercept(Echo.service(handler), interceptor))) {
      Calls.Reply reply = Calls.unary(grpc.channel(), Echo.OTHER, Calls.headers(
          SpillwayMetadata.SESSION, 7, SpillwayMetadata.TOKENS, 100, SpillwayMetadata.PRIORITY, 3,
          SpillwayMetadata.BUDGET, 5_000, SpillwayMetadata.FLAGS, 1), "hi").await();

      assertEquals(Status.Code.OK, reply.status().getCode());
      assertEquals("echo:hi", reply.body());
      assertEquals("0", status(reply));
      assertEquals("2", reply.trailer(SpillwayMetadata.CREDIT_DELTA));
      assertEquals("11", reply.trailer(SpillwayMetadata.PRICE));

      var request = gate.last();
      assertEquals(7, request.sessionId());
      assertEquals(100, request.tokens());
      assertEquals(3, request.priority());
      assertTrue(request.isRegister());
      assertEquals(interfaces.idOf(Echo.OTHER), request.interfaceId());
      assertEquals(List.of(Outcome.SUCCESS), gate.outcomes);

      SpillwayContext context = seen.get();
      assertNotNull(context, "the handler sees the Spillway context");
      assertEquals(100, context.tokens());
      assertEquals(3, context.priority());
      assertEquals(interfaces.idOf(Echo.OTHER), context.interfaceId());
      assertTrue(context.permit().isAdmitted());
      assertNotNull(budget.get(), "the request's budget is bound for the handler");
      assertEquals(5_000, budget.get().remainingNanos(), "no time passed on the virtual clock");
      assertNull(SpillwayContext.current(), "not leaked to the test thread");
    }
  }

  @Test
  void aRejectedCallEndsAtOnceWithTheReasonAndTheFieldsInTrailers() {
    ScriptedGate gate = new ScriptedGate();
    gate.decide = request -> io.spillway.api.Status.REJECTED_PRICE;
    gate.fill = (request, response) -> response.price(42).creditDelta(-1);
    List<String> handled = new ArrayList<>();
    Echo.Handler handler = (method, request, out) -> {
      handled.add(request);
      Echo.ECHO.handle(method, request, out);
    };
    try (InProcess grpc = new InProcess(ServerInterceptors.intercept(Echo.service(handler),
        new SpillwayServerInterceptor(gate, clock)))) {
      Calls.Reply reply = Calls.unary(grpc.channel(), Echo.UNARY, "hi").await();

      assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode());
      assertEquals("spillway: rejected (price 42)", reply.status().getDescription());
      assertEquals(String.valueOf(io.spillway.api.Status.REJECTED_PRICE.code()), status(reply));
      assertEquals("42", reply.trailer(SpillwayMetadata.PRICE));
      assertEquals("-1", reply.trailer(SpillwayMetadata.CREDIT_DELTA));
      assertTrue(handled.isEmpty(), "the handler never saw the rejected call");
      assertEquals(List.of(Outcome.DROPPED), gate.outcomes);
    }
  }

  @Test
  void malformedHeadersNeverFailTheCall() {
    ScriptedGate gate = new ScriptedGate();
    try (InProcess grpc = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
        new SpillwayServerInterceptor(gate, clock)))) {
      Calls.Reply reply = Calls.unary(grpc.channel(), Echo.UNARY, Calls.headers(
          SpillwayMetadata.TOKENS, "lots", SpillwayMetadata.SESSION, "9"), "hi").await();
      assertEquals(Status.Code.OK, reply.status().getCode());
      assertEquals(0, gate.last().tokens());
      assertEquals(9, gate.last().sessionId());
    }
  }

  /** Every way a call can end, over a leak-checking gate: each permit ends exactly once. */
  @Test
  void everyCallEndsExactlyOnce() {
    LeakCheckingServerGate gate = new LeakCheckingServerGate(NoControl.INSTANCE.newServerGate(
        new ServerEnvironment(clock, clock, QueueDelaySignal.NONE, ControlChannel.DISCARD,
            OverloadMetrics.NONE, 1)));
    List<StreamObserver<String>> held = new ArrayList<>();
    Echo.Handler handler = (method, request, out) -> {
      switch (request) {
        case "fail" -> throw new IllegalStateException("handler bug (expected by the test)");
        case "missing" -> throw Status.NOT_FOUND.withDescription("no such key").asRuntimeException();
        case "budget" -> throw new BudgetExceededException(900, 100);
        case "close-then-throw" -> {
          out.onNext("done");
          out.onCompleted();
          throw new IllegalStateException("after close (expected by the test)");
        }
        case "hold" -> held.add(out);
        default -> Echo.ECHO.handle(method, request, out);
      }
    };
    try (InProcess grpc = new InProcess(ServerInterceptors.intercept(Echo.service(handler),
        new SpillwayServerInterceptor(gate, clock)))) {
      ManagedChannel channel = grpc.channel();

      Calls.Reply ok = Calls.unary(channel, Echo.UNARY, "hi").await();
      assertEquals(Status.Code.OK, ok.status().getCode());
      assertEquals("0", status(ok));

      Calls.Reply failed = Calls.unary(channel, Echo.UNARY, "fail").await();
      assertEquals(Status.Code.UNKNOWN, failed.status().getCode());
      assertEquals(String.valueOf(io.spillway.api.Status.FAILED.code()), status(failed),
          "the interceptor closed the call itself, so the trailers still carry the fields");

      Calls.Reply missing = Calls.unary(channel, Echo.UNARY, "missing").await();
      assertEquals(Status.Code.NOT_FOUND, missing.status().getCode());
      assertEquals("no such key", missing.status().getDescription());
      assertEquals(String.valueOf(io.spillway.api.Status.FAILED.code()), status(missing));

      Calls.Reply budget = Calls.unary(channel, Echo.UNARY, "budget").await();
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, budget.status().getCode());
      assertEquals("spillway: rejected (budget)", budget.status().getDescription());
      assertEquals(String.valueOf(io.spillway.api.Status.REJECTED_BUDGET.code()), status(budget));

      Calls.Reply closeThenThrow = Calls.unary(channel, Echo.UNARY, "close-then-throw").await();
      assertEquals(Status.Code.OK, closeThenThrow.status().getCode());

      Calls.Handle holding = Calls.unary(channel, Echo.UNARY, "hold");
      assertEquals(1, held.size());
      assertEquals(1, gate.outstanding(), "the held call's permit is still open");
      holding.call().cancel("client gives up", null);
      assertEquals(Status.Code.CANCELLED, holding.await().status().getCode());

      Calls.Handle chat = Calls.start(channel, Echo.CHAT, new Metadata(), false, "a", "b");
      chat.call().sendMessage("c");
      chat.call().halfClose();
      Calls.Reply chatted = chat.await();
      assertEquals(List.of("echo:a", "echo:b", "echo:c"), chatted.messages());
      assertEquals("0", status(chatted));

      Calls.Handle abandoned = Calls.start(channel, Echo.CHAT, new Metadata(), false, "x");
      abandoned.call().cancel("client gives up on the stream", null);
      abandoned.await();

      assertEquals(8, gate.issued(), "one permit per call, streaming or not");
      gate.assertNoLeaks();
    }
  }

  /**
   * An exception-mapping interceptor between the handler and Spillway's (Spring gRPC adds one as
   * soon as an application declares a {@code GrpcExceptionHandler}) closes the call itself with
   * {@code Status.fromThrowable}: UNKNOWN, the exception as its cause. A budget abort closed that
   * way is still answered as Spillway answers it, RESOURCE_EXHAUSTED with its pushback, so the
   * client backs off instead of taking it for a server bug.
   */
  @Test
  void aBudgetAbortMappedByAnotherInterceptorIsStillAFastReject() {
    ScriptedGate gate = new ScriptedGate();
    Echo.Handler handler = (method, request, out) -> {
      throw new BudgetExceededException(900, 100);
    };
    ServerInterceptor mapping = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        ServerCall.Listener<Q> inner = next.startCall(call, headers);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(inner) {
          @Override
          public void onHalfClose() {
            try {
              super.onHalfClose();
            } catch (RuntimeException e) {
              call.close(Status.fromThrowable(e), new Metadata());
            }
          }
        };
      }
    };
    try (InProcess grpc = new InProcess(ServerInterceptors.intercept(
        ServerInterceptors.intercept(Echo.service(handler), mapping),
        new SpillwayServerInterceptor(gate, clock)))) {
      Calls.Reply budget = Calls.unary(grpc.channel(), Echo.UNARY, "x").await();
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, budget.status().getCode());
      assertEquals("spillway: rejected (budget)", budget.status().getDescription());
      assertEquals(String.valueOf(io.spillway.api.Status.REJECTED_BUDGET.code()), status(budget));
      assertTrue(budget.trailer(SpillwayServerInterceptor.RETRY_PUSHBACK_MS) != null, "with a pushback");
    }
  }

  /**
   * Stands for the wait for a worker: between the Spillway interceptor's admission and the first
   * callback its listener gets, the virtual clock moves by {@code wait}.
   */
  private ServerInterceptor workerWait(AtomicLong wait) {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        ServerCall.Listener<Q> admitted = next.startCall(call, headers);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(admitted) {
          private boolean waited;

          @Override
          public void onReady() {
            waitOnce();
            super.onReady();
          }

          @Override
          public void onMessage(Q message) {
            waitOnce();
            super.onMessage(message);
          }

          private void waitOnce() {
            if (!waited) {
              waited = true;
              clock.advance(wait.get());
            }
          }
        };
      }
    };
  }

  @Test
  void aCallThatSpendsItsDeadlinesBudgetWaitingForAWorkerIsAbortedUnrun() {
    ScriptedGate scripted = new ScriptedGate();
    LeakCheckingServerGate gate = new LeakCheckingServerGate(scripted);
    List<String> handled = new ArrayList<>();
    List<Long> budgets = new ArrayList<>();
    Echo.Handler handler = (method, request, out) -> {
      handled.add(request);
      budgets.add(RequestBudget.currentOrNull().remainingNanos());
      Echo.ECHO.handle(method, request, out);
    };
    AtomicLong wait = new AtomicLong(20_000_000_000L); // past a deadline 10 s away on the real clock
    SpillwayServerInterceptor spillway = new SpillwayServerInterceptor(gate, clock,
        InterfaceRegistry.of(Echo.DESCRIPTOR), ControlChannel.DISCARD, QueueDelaySignal.NONE, 5_000);
    try (InProcess grpc = new InProcess(ServerInterceptors.intercept(Echo.service(handler),
        spillway, workerWait(wait)))) {
      Channel withDeadline = ClientInterceptors.intercept(grpc.channel(), new ClientInterceptor() {
        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method,
            CallOptions options, Channel next) {
          return next.newCall(method, options.withDeadlineAfter(10, TimeUnit.SECONDS));
        }
      });

      Calls.Reply late = Calls.unary(withDeadline, Echo.UNARY, "late").await();
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, late.status().getCode(), late.toString());
      assertEquals("spillway: rejected (budget)", late.status().getDescription());
      assertEquals(String.valueOf(io.spillway.api.Status.REJECTED_BUDGET.code()), status(late));
      assertNotNull(late.trailer(SpillwayServerInterceptor.RETRY_PUSHBACK_MS));

      assertEquals(List.of(), handled, "no aborted call reached the handler");

      wait.set(6_000);
      Calls.Reply header = Calls.unary(grpc.channel(), Echo.UNARY,
          Calls.headers(SpillwayMetadata.BUDGET, 5_000), "header").await();
      assertEquals(Status.Code.OK, header.status().getCode(),
          "a header's budget bounds the handler's waits; it does not abort the call");
      Calls.Reply target = Calls.unary(grpc.channel(), Echo.UNARY, "target").await();
      assertEquals(Status.Code.OK, target.status().getCode(), "nor does the server's own target");
      Calls.Reply inTime = Calls.unary(withDeadline, Echo.UNARY, "in time").await();
      assertEquals(Status.Code.OK, inTime.status().getCode(), inTime.toString());
      assertEquals(List.of("header", "target", "in time"), handled);
      assertEquals(0L, budgets.get(0), "the wait for a worker took all of the header's budget");
      assertEquals(0L, budgets.get(1));
      assertEquals(0L, budgets.get(2),
          "the target's budget, nearer than the deadline's, less the wait");

      // A bidi handler has its call as the call starts, here at admission (the plain
      // interceptor decides in interceptCall): a wait before its first message is a wait for
      // that message, not for the handler, so nothing is aborted unrun.
      wait.set(20_000_000_000L);
      Calls.Handle stream = Calls.start(withDeadline, Echo.CHAT, new Metadata(), false, "a");
      stream.call().sendMessage("b");
      stream.call().halfClose();
      Calls.Reply streamed = stream.await();
      assertEquals(Status.Code.OK, streamed.status().getCode(), streamed.toString());
      assertEquals(List.of("echo:a", "echo:b"), streamed.messages());
      assertEquals(List.of(Outcome.ABORTED, Outcome.SUCCESS, Outcome.SUCCESS, Outcome.SUCCESS,
          Outcome.SUCCESS), scripted.outcomes);
      gate.assertNoLeaks();
    }
  }

  @Test
  void theNearerOfTheDeadlineAndTheServerTargetSetsTheBudget() {
    long deadline = 10_000_000_000L;
    long[][] cases = { // target, with a 10 s deadline?, then the budget's bounds
        {SpillwayServerInterceptor.NO_TARGET, 1, deadline - 1_000_000_000L, deadline},
        {SpillwayServerInterceptor.NO_TARGET, 0, Long.MAX_VALUE, Long.MAX_VALUE},
        {5_000_000, 1, 5_000_000, 5_000_000}, // a looser deadline does not loosen the target
        {5_000_000, 0, 5_000_000, 5_000_000},
        {60_000_000_000L, 1, deadline - 1_000_000_000L, deadline}, // a nearer one narrows it
        {60_000_000_000L, 0, 60_000_000_000L, 60_000_000_000L}};
    for (long[] c : cases) {
      LeakCheckingServerGate gate = new LeakCheckingServerGate(new ScriptedGate());
      AtomicLong budget = new AtomicLong(-1);
      Echo.Handler handler = (method, request, out) -> {
        RequestBudget b = RequestBudget.currentOrNull();
        budget.set(b == null ? Long.MAX_VALUE : b.remainingNanos());
        Echo.ECHO.handle(method, request, out);
      };
      SpillwayServerInterceptor spillway = new SpillwayServerInterceptor(gate, clock,
          InterfaceRegistry.of(Echo.DESCRIPTOR), ControlChannel.DISCARD, QueueDelaySignal.NONE,
          c[0]);
      try (InProcess grpc =
          new InProcess(ServerInterceptors.intercept(Echo.service(handler), spillway))) {
        Channel channel = c[1] == 0 ? grpc.channel() : ClientInterceptors.intercept(grpc.channel(),
            new ClientInterceptor() {
              @Override
              public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method,
                  CallOptions options, Channel next) {
                return next.newCall(method,
                    options.withDeadlineAfter(deadline, TimeUnit.NANOSECONDS));
              }
            });
        Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "x").await();
        assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
        String what = "target " + c[0] + ", deadline " + (c[1] == 1) + ": " + budget.get();
        assertTrue(budget.get() >= c[2] && budget.get() <= c[3], what);
        gate.assertNoLeaks();
      }
    }
  }

  @Test
  void theControlServiceIsNotAdmitted() {
    LeakCheckingServerGate gate = new LeakCheckingServerGate(new ScriptedGate());
    SpillwayControlService control = new SpillwayControlService(clock);
    control.bind(gate);
    try (InProcess grpc = new InProcess(
        ServerInterceptors.intercept(control.serviceDefinition(), new SpillwayServerInterceptor(gate, clock)))) {
      var call = grpc.channel().newCall(SpillwayControlService.DEREGISTER, io.grpc.CallOptions.DEFAULT);
      var reply = new java.util.concurrent.CompletableFuture<Status>();
      call.start(new io.grpc.ClientCall.Listener<>() {
        @Override
        public void onClose(Status status, Metadata trailers) {
          reply.complete(status);
        }
      }, Calls.headers(SpillwayMetadata.SESSION, 5));
      call.request(1);
      call.sendMessage(new byte[0]);
      call.halfClose();
      assertEquals(Status.Code.OK, reply.join().getCode());
      assertEquals(0, gate.issued());
    }
  }

  @Test
  void aCancelledCallsCreditDeltaGoesToTheControlChannel() {
    ScriptedGate gate = new ScriptedGate();
    gate.fill = (request, response) -> response.creditDelta(3);
    List<String> sent = new ArrayList<>();
    ControlChannel orphans = (session, delta) -> sent.add(session + ":" + delta);
    List<StreamObserver<String>> held = new ArrayList<>();
    try (InProcess grpc = new InProcess(ServerInterceptors.intercept(
        Echo.service((method, request, out) -> held.add(out)),
        new SpillwayServerInterceptor(gate, clock, new InterfaceRegistry(), orphans)))) {
      Calls.Handle call = Calls.unary(grpc.channel(), Echo.UNARY,
          Calls.headers(SpillwayMetadata.SESSION, 12), "hold");
      call.call().cancel("gone", null);
      call.await();
      assertEquals(List.of("12:3"), sent);
      assertEquals(List.of(Outcome.FAILED), gate.outcomes);
      assertFalse(held.isEmpty());
    }
  }
}
