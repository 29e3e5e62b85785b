package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A client that never reads the answers carrying its grants (its callers gave up on those calls
 * just after the server answered them) counts fewer credits than the server holds open for it;
 * with deltas alone the revocations that follow take its count to nothing while the server's
 * window stays open, and it waits for an explicit credit the server has no reason to send, until
 * the server drops the session as idle. With stamped windows the client, its window in doubt and
 * nothing in flight, asks the server to restate it, and is served. Virtual time, in-process.
 */
class LostAnswerTest {

  private static final long SLO = 5_000_000;
  private static final long RTT = 50_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10 * RTT);

  /**
   * Sits between a session and its channel and, while armed, turns every answer to an Echo call
   * whose trailers grant credits into {@code CANCELLED} with no trailers: what the session hears
   * of a call its caller cancelled after the server had answered it.
   */
  static final class AnswerLoser implements ClientInterceptor {
    volatile boolean armed;
    int lost;

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
        Channel next) {
      ClientCall<Q, R> call = next.newCall(method, options);
      if (!method.getFullMethodName().equals(Echo.UNARY.getFullMethodName())) {
        return call;
      }
      return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
        @Override
        public void start(Listener<R> listener, Metadata headers) {
          super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
            @Override
            public void onClose(Status status, Metadata trailers) {
              String delta = trailers.get(SpillwayMetadata.CREDIT_DELTA);
              if (armed && delta != null && Integer.parseInt(delta) > 0) {
                lost++;
                super.onClose(Status.CANCELLED.withDescription("caller gave up (test)"), new Metadata());
              } else {
                super.onClose(status, trailers);
              }
            }
          }, headers);
        }
      };
    }
  }

  @Test
  void aClientThatLostTheAnswersCarryingItsGrantsIsServedAfterThem() {
    OverloadScheme scheme = io.spillway.credit.Spillway.forSloNanos(SLO);
    List<StreamObserver<String>> held = new CopyOnWriteArrayList<>();
    Echo.Handler holding = (m, req, out) -> held.add(out);
    try (SpillwayGrpcServer spillway = SpillwayGrpc.server(scheme).ticker(clock).scheduler(clock)
            .parallelism(8).queueDelay(QueueDelaySignal.NONE).build();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(holding)), spillway.controlService())) {
      AnswerLoser loser = new AnswerLoser();
      SpillwayClientInterceptor session = SpillwayGrpc.client(scheme).sessionId(9).sloNanos(SLO)
          .ticker(clock).scheduler(clock).build();
      Channel ch = ClientInterceptors.intercept(ClientInterceptors.intercept(grpc.channel(), loser), session);
      loser.armed = true;
      List<Calls.Handle> first = new ArrayList<>();
      for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 8; i++) {
          first.add(Calls.unary(ch, Echo.UNARY, "r" + round));
        }
        answerAll(held);
        clock.advance(RTT);
      }
      clock.advance(SLO); // what is still queued expires
      for (Calls.Handle h : first) {
        h.await();
      }
      assertTrue(loser.lost > 0, "answers with grants were lost");
      loser.armed = false;
      List<String> statuses = new ArrayList<>();
      int ok = 0;
      for (int i = 0; i < 10; i++) {
        Calls.Handle h = Calls.unary(ch, Echo.UNARY, "after" + i);
        answerAll(held);
        clock.advance(SLO);
        Calls.Reply r = h.await();
        statuses.add(r.status().getCode().toString());
        ok += r.status().isOk() ? 1 : 0;
      }
      assertEquals(10, ok, "after " + loser.lost + " lost grants: " + statuses);
    }
  }

  private static void answerAll(List<StreamObserver<String>> held) {
    while (!held.isEmpty()) {
      StreamObserver<String> o = held.remove(0);
      o.onNext("ok");
      o.onCompleted();
    }
  }
}
