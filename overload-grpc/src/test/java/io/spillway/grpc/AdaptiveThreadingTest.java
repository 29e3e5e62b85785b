package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * µTune's in-line/dispatch choice on a real gRPC (Netty) server: calls run on the transport thread
 * while the estimated load is where the profile says in-line is faster, and on the workers once it
 * is where dispatch is; the load and the adaptation run in virtual time, the calls are real.
 */
class AdaptiveThreadingTest {

  private static final ThreadingModel IB = ThreadingModel.parse("IB");
  private static final ThreadingModel DB4 = ThreadingModel.parse("DB4");

  @Test
  void callsMoveBetweenTheTransportThreadAndTheWorkersWithTheLoad() throws Exception {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 60_000_000_000L);
    ThreadingProfile profile = ThreadingProfile.builder()
        .add(IB, 0, 50_000).add(IB, 1_000, 80_000).add(IB, 2_000, 5_000_000)
        .add(DB4, 0, 100_000).add(DB4, 1_000, 110_000).add(DB4, 2_000, 120_000).build();
    AtomicReference<String> ranOn = new AtomicReference<>();
    Echo.Handler handler = (method, request, out) -> {
      ranOn.set(Thread.currentThread().getName());
      out.onNext("echo:" + request);
      out.onCompleted();
    };
    ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(Echo.service(handler));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(50)).ticker(clock).scheduler(clock)
        .adaptiveThreading(ThreadingAdaptation.of(profile)).install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = ManagedChannelBuilder.forAddress("localhost", server.getPort()).usePlaintext().build();
    try {
      assertEquals(IB, spillway.threadingModel().orElseThrow());
      call(channel, "first");
      String transportThread = ranOn.get();
      assertTrue(isTransportThread(transportThread), "in-line at no load ran on " + transportThread);

      // 5,000 calls per second of virtual time: dispatch is predicted faster.
      for (int i = 0; i < 200 && spillway.threadingModel().orElseThrow().equals(IB); i++) {
        clock.advance(200_000);
        call(channel, "busy" + i);
      }
      assertEquals(DB4, spillway.threadingModel().orElseThrow());
      call(channel, "dispatched");
      assertFalse(isTransportThread(ranOn.get()), "dispatched call ran on " + ranOn.get());

      // 50 calls per second: back to in-line.
      for (int i = 0; i < 200 && spillway.threadingModel().orElseThrow().equals(DB4); i++) {
        clock.advance(20_000_000);
        call(channel, "quiet" + i);
      }
      assertEquals(IB, spillway.threadingModel().orElseThrow());
      call(channel, "in-line again");
      assertTrue(isTransportThread(ranOn.get()), "in-line call ran on " + ranOn.get());
      assertEquals(2, spillway.threadingSwitches());
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }

  @Test
  void adaptiveThreadingOnAServerItCannotWireIsAClearError() {
    // build() leaves the server's executors to its caller, so nothing would choose in-line or
    // dispatch per call: the adaptation would be dropped without a word.
    ThreadingProfile profile = ThreadingProfile.builder().add(IB, 0, 50_000).add(DB4, 0, 100_000).build();
    SpillwayGrpcServer.Builder b = SpillwayGrpc.server().slo(Duration.ofMillis(50))
        .queueDelay(io.spillway.api.QueueDelaySignal.NONE).adaptiveThreading(ThreadingAdaptation.of(profile));
    IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, b::build);
    assertTrue(e.getMessage().contains("install"), e.getMessage());
  }

  private static void call(ManagedChannel channel, String body) throws Exception {
    Calls.Reply reply = Calls.unary(channel, Echo.UNARY, body).await();
    assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
  }

  /** gRPC's Netty transport threads are its event loops, named "...-ELG-...". */
  private static boolean isTransportThread(String name) {
    return name != null && name.contains("ELG");
  }
}
