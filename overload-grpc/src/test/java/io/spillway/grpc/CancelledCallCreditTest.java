package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A call cancelled while its handler runs, whose handler then closes it: gRPC runs the cancel
 * after the running callback, so the handler's close comes first, and its trailers go nowhere.
 * The permit's credit delta must still reach the session, on its credit stream (in-process; the
 * latches only wait for the other threads).
 */
class CancelledCallCreditTest {

  @Test
  void theCreditDeltaOfACallCancelledWhileItsHandlerRanGoesOnTheCreditStream() throws Exception {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
    ScriptedGate scripted = new ScriptedGate();
    scripted.fill = (request, response) -> response.creditDelta(3);
    OverloadScheme scheme = scripted.scheme();
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch handled = new CountDownLatch(1);
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service((method, request, out) -> {
      running.countDown();
      try {
        release.await(10, TimeUnit.SECONDS); // a blocking handler, unaware of the cancel
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      out.onNext("late");
      out.onCompleted();
      handled.countDown();
    }));
    ExecutorService one = Executors.newSingleThreadExecutor();
    SpillwayGrpcServer spillway = SpillwayGrpc.server(scheme).ticker(clock).scheduler(clock)
        .parallelism(1).executor(one, QueueDelaySignal.NONE).install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
    try {
      List<Integer> credits = new CopyOnWriteArrayList<>();
      CountDownLatch credited = new CountDownLatch(1);
      ClientCall<byte[], ControlMarshallers.CreditMessage> stream = channel.newCall(SpillwayControlService.CREDITS,
          CallOptions.DEFAULT);
      stream.start(new ClientCall.Listener<>() {
        @Override
        public void onMessage(ControlMarshallers.CreditMessage credit) {
          credits.add(credit.delta());
          credited.countDown();
        }
      }, Calls.headers(SpillwayMetadata.SESSION, 12));
      stream.request(100);
      stream.sendMessage(new byte[0]);
      stream.halfClose();

      Calls.Handle call = Calls.unary(channel, Echo.UNARY,
          Calls.headers(SpillwayMetadata.SESSION, 12), "x");
      assertTrue(running.await(10, TimeUnit.SECONDS));
      call.call().cancel("the client gave up", null);
      assertEquals(Status.Code.CANCELLED, call.await().status().getCode());
      release.countDown();
      assertTrue(handled.await(10, TimeUnit.SECONDS));
      assertTrue(credited.await(10, TimeUnit.SECONDS), "no credit reached the stream");
      assertEquals(List.of(3), credits);
      assertEquals(List.of(Outcome.FAILED), scripted.outcomes, "its client never had the answer");
    } finally {
      channel.shutdownNow();
      server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
      spillway.close();
      one.shutdownNow();
    }
  }
}
