package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.BreakwaterServerGate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A session whose credit stream ends after the server acknowledged it has been forgotten by the
 * server (a stream that ends deregisters its session): the client starts again under a new id,
 * so a drained session is not left waiting for a credit nobody will send, and one with credits
 * does not send beyond what the server now grants. Virtual time, in-process.
 */
class SessionRenewalTest {

  private static final long SLO = 1_000_000;
  private static final long RTT = 50_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10 * RTT);
  private final OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, RTT));

  private SpillwayGrpcServer server() {
    return SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock).parallelism(1)
        .queueDelay(QueueDelaySignal.NONE).build();
  }

  private SpillwayClientInterceptor session(long id) {
    return SpillwayGrpc.client(breakwater).sessionId(id).sloNanos(SLO).ticker(clock).scheduler(clock).build();
  }

  /**
   * Sits between a session and its channel and keeps the Credits calls, so a test can end one as
   * a broken connection would: the client hears CANCELLED, the server hears a cancel.
   */
  static final class StreamBreaker implements ClientInterceptor {
    final List<ClientCall<?, ?>> credits = new CopyOnWriteArrayList<>();
    int opened;

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
        Channel next) {
      ClientCall<Q, R> call = next.newCall(method, options);
      if (method.getFullMethodName().equals(SpillwayControlService.CREDITS.getFullMethodName())) {
        credits.add(call);
        opened++;
      }
      return call;
    }

    void breakAll() {
      for (ClientCall<?, ?> c : credits) {
        c.cancel("connection reset (test)", null);
      }
      credits.clear();
    }
  }

  /**
   * A drained session (window 0, waiting for an explicit credit) whose credit stream breaks: the
   * server deregisters it, so nobody will send the old session a credit. Started again under a
   * new id, it is served.
   */
  @Test
  void aDrainedSessionWhoseStreamBrokeIsServedAgain() {
    try (SpillwayGrpcServer spillway = server();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)), spillway.controlService())) {
      BreakwaterServerGate gate = (BreakwaterServerGate) spillway.gate();
      StreamBreaker breaker = new StreamBreaker();
      SpillwayClientInterceptor a = session(1);
      SpillwayClientInterceptor b = session(2);
      Channel toA = ClientInterceptors.intercept(grpc.channel(), a);
      Channel toB = ClientInterceptors.intercept(ClientInterceptors.intercept(grpc.channel(), breaker), b);
      assertEquals("echo:a1", Calls.unary(toA, Echo.UNARY, "a1").await().body());
      assertEquals("echo:b1", Calls.unary(toB, Echo.UNARY, "b1").await().body());
      assertEquals(0, gate.windowOf(2), "B is drained, as in BreakwaterOverGrpcTest");

      breaker.breakAll(); // B's connection blips

      int ok = 0;
      List<String> statuses = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        Calls.Handle h = Calls.unary(toB, Echo.UNARY, "b" + i);
        clock.advance(SLO);
        Calls.Reply r = h.await();
        statuses.add(r.status().getCode() + (r.status().getDescription() == null ? "" : " " + r.status().getDescription()));
        ok += r.status().isOk() ? 1 : 0;
      }
      assertEquals(20, ok, "B is served again once its new stream is open: " + statuses);
      assertTrue(b.sessionId() != 2, "B started again under a new id");
      assertEquals(2, breaker.opened, "one stream, then the new session's");
    }
  }

  /**
   * A session the server drops as idle (BreakwaterServerGate's timeout) has its credit stream
   * ended, and its client starts again under a new id: whatever window the client still counted,
   * drifted or not, is not kept (ControlChannel#sessionEnded). Its next call is served.
   */
  @Test
  void aSessionTheServerDroppedAsIdleStartsAgainUnderANewId() {
    try (SpillwayGrpcServer spillway = server();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)), spillway.controlService())) {
      BreakwaterServerGate gate = (BreakwaterServerGate) spillway.gate();
      StreamBreaker streams = new StreamBreaker();
      SpillwayClientInterceptor a = session(7);
      Channel toA = ClientInterceptors.intercept(ClientInterceptors.intercept(grpc.channel(), streams), a);
      assertEquals("echo:a1", Calls.unary(toA, Echo.UNARY, "a1").await().body());
      assertEquals(1, spillway.control().subscribers(), "its credit stream is open");
      for (int s = 0; s < 12; s++) {
        clock.advance(1_000_000_000L); // idle past the gate's 10 s timeout
      }
      assertEquals(0, gate.sessionCount(), "the gate dropped the idle session");
      assertTrue(a.sessionId() != 7, "the client started again under a new id");
      assertEquals("echo:a2", Calls.unary(toA, Echo.UNARY, "a2").await().body());
      assertEquals(2, streams.opened, "the first stream, then the new session's");
    }
  }

  /**
   * A session holding a window of several credits whose stream breaks: the server forgets it. Had
   * the client kept its window, the server (re-registering it with one credit) would refuse its
   * calls beyond that for credit; started again under a new id, none is refused.
   */
  @Test
  void aSessionWithAWindowWhoseStreamBrokeIsNeverRefusedForCredit() {
    OverloadScheme spillwayScheme = io.spillway.credit.Spillway.forSloNanos(5 * SLO);
    List<StreamObserver<String>> held = new CopyOnWriteArrayList<>();
    Echo.Handler holding = (m, req, out) -> held.add(out);
    try (SpillwayGrpcServer spillway = SpillwayGrpc.server(spillwayScheme).ticker(clock).scheduler(clock)
            .parallelism(8).queueDelay(QueueDelaySignal.NONE).build();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(holding)), spillway.controlService())) {
      StreamBreaker breaker = new StreamBreaker();
      SpillwayClientInterceptor s = SpillwayGrpc.client(spillwayScheme).sessionId(9).sloNanos(5 * SLO)
          .ticker(clock).scheduler(clock).build();
      Channel ch = ClientInterceptors.intercept(ClientInterceptors.intercept(grpc.channel(), breaker), s);
      // grow the window: keep 8 calls outstanding for a while
      List<Calls.Handle> calls = new ArrayList<>();
      for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 8; i++) {
          calls.add(Calls.unary(ch, Echo.UNARY, "r" + round));
        }
        while (!held.isEmpty()) {
          StreamObserver<String> o = held.remove(0);
          o.onNext("ok");
          o.onCompleted();
        }
        clock.advance(RTT);
      }
      for (Calls.Handle h : calls) {
        h.await();
      }
      breaker.breakAll();
      int refused = 0;
      List<Calls.Handle> burst = new ArrayList<>();
      for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 8; i++) {
          burst.add(Calls.unary(ch, Echo.UNARY, "after" + round));
        }
        while (!held.isEmpty()) {
          StreamObserver<String> o = held.remove(0);
          o.onNext("ok");
          o.onCompleted();
        }
        clock.advance(RTT);
      }
      clock.advance(10 * SLO);
      List<String> reasons = new ArrayList<>();
      for (Calls.Handle h : burst) {
        Calls.Reply r = h.await();
        if (!r.status().isOk()) {
          refused++;
          reasons.add(r.status().getDescription());
        }
      }
      assertEquals(0, refused, reasons.toString());
    }
  }
}
