package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.spillway.api.NoControl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The workers {@code install} gives a server do not cap how many handlers may block at once at the
 * number of carriers: a handler waiting on a downstream call, a database or a lock gives its thread
 * up, as it does on grpc-java's default executor. (These tests run without {@code --add-opens}, so
 * on the JDK's own virtual threads; with it, on measured carriers, the same holds.)
 */
class BlockingHandlersTest {

  @Test
  void moreHandlersThanCarriersCanBlockAtOnce() throws Exception {
    int calls = 8;
    CountDownLatch allInside = new CountDownLatch(calls);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger onVirtualThreads = new AtomicInteger();
    Echo.Handler blocking = (method, request, out) -> {
      if (Thread.currentThread().isVirtual()) {
        onVirtualThreads.incrementAndGet();
      }
      allInside.countDown();
      try {
        release.await(); // a downstream call, say
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      out.onNext("done:" + request);
      out.onCompleted();
    };
    ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(Echo.service(blocking));
    SpillwayGrpcServer spillway = SpillwayGrpc.server(NoControl.INSTANCE).slo(Duration.ofMillis(50)).parallelism(1)
        .install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = ManagedChannelBuilder.forAddress("localhost", server.getPort()).usePlaintext().build();
    try {
      List<Calls.Handle> pending = new ArrayList<>();
      for (int i = 0; i < calls; i++) {
        pending.add(Calls.unary(channel, Echo.UNARY, "c" + i));
      }
      // Liveness, not speed: with one platform thread per carrier the second call never starts.
      assertTrue(allInside.await(30, TimeUnit.SECONDS), (calls - allInside.getCount())
          + " of " + calls + " handlers started while the others blocked, on 1 carrier");
      release.countDown();
      for (int i = 0; i < calls; i++) {
        Calls.Reply reply = pending.get(i).await();
        assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
        assertEquals("done:c" + i, reply.body());
      }
      assertEquals(calls, onVirtualThreads.get());
      assertTrue(spillway.workers().contains("virtual threads"), spillway.workers());
    } finally {
      release.countDown();
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }
}
