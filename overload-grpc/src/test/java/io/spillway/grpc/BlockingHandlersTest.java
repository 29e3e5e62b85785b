package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.spillway.api.NoControl;
import io.spillway.api.testing.VirtualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
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

  /**
   * The default scheme's limit for plain clients counts calls waiting for a worker, not calls in
   * flight: a blocking service keeps far more calls in its handlers than it has cores, none of
   * them queued. Time stands still here (a virtual clock that is never advanced), so the limit
   * stays at the parallelism it starts from and no control period can grow it; counted in flight,
   * the third call was refused.
   */
  @Test
  void plainCallsBlockedInTheirHandlersDoNotFillTheDefaultSchemesLimit() throws Exception {
    int calls = 32;
    Semaphore entered = new Semaphore(0);
    CountDownLatch release = new CountDownLatch(1);
    Echo.Handler blocking = (method, request, out) -> {
      entered.release();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      out.onNext("done:" + request);
      out.onCompleted();
    };
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10_000_000_000L);
    ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(Echo.service(blocking));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofSeconds(1)).parallelism(2)
        .ticker(clock).scheduler(clock).install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = ManagedChannelBuilder.forAddress("localhost", server.getPort()).usePlaintext().build();
    try {
      List<Calls.Handle> pending = new ArrayList<>();
      for (int i = 0; i < calls; i++) {
        Calls.Handle call = Calls.unary(channel, Echo.UNARY, "c" + i);
        pending.add(call);
        // one at a time: each is in its handler before the next is sent, so none waits
        while (!entered.tryAcquire(10, TimeUnit.MILLISECONDS)) {
          if (call.reply().isDone()) {
            throw new AssertionError("call " + i + " of " + calls + ", with " + i
                + " blocked in their handlers and none waiting: " + call.await());
          }
        }
      }
      release.countDown();
      for (int i = 0; i < calls; i++) {
        Calls.Reply reply = pending.get(i).await();
        assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
      }
    } finally {
      release.countDown();
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }
}
