package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A stream that waits for its client is not queueing at the server: the installed server's delay
 * signal counts a client-streaming or bidi call only while it has work queued for the workers, so
 * an open stream the client leaves idle neither raises the signal nor gets the server's AQM
 * refusing everyone else; nor does a unary call whose client stalls after its headers
 * (MessageArrival). Virtual time; in-process transport.
 */
class IdleCallsTest {

  private static final long MS = 1_000_000;
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 120_000 * MS);
  private final CountDownLatch callsStarted = new CountDownLatch(1);
  private Server server;
  private ManagedChannel channel;
  private SpillwayGrpcServer spillway;
  private LeakCheckingServerGate checker;

  /** Counts calls whose interceptors and handler's startCall have run (on a worker). */
  private final ServerInterceptor started = new ServerInterceptor() {
    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
        ServerCallHandler<Q, R> next) {
      ServerCall.Listener<Q> listener = next.startCall(call, headers);
      callsStarted.countDown();
      return listener;
    }
  };

  private Channel start() throws Exception {
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service(Echo.ECHO));
    spillway = SpillwayGrpc.server(LeakCheckingServerGate.checking(Spillway.forSloNanos(5 * MS),
            c -> checker = c))
        .sloMillis(5).ticker(clock).scheduler(clock).parallelism(4).install(builder);
    builder.intercept(started); // added last, so it runs first and sees the others return
    server = builder.build().start();
    channel = InProcessChannelBuilder.forName(name).build();
    return channel;
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (spillway != null) {
      spillway.close();
    }
    if (checker != null) {
      checker.assertNoLeaks();
    }
  }

  private long delayNow() {
    return spillway.queueDelay().queueingDelayNanos(clock.read());
  }

  @Test
  void aBidiStreamTheClientLeavesIdleIsNoQueueingDelay() throws Exception {
    Channel ch = start();
    Calls.Handle idle = Calls.start(ch, Echo.CHAT, new Metadata(), false);
    assertTrue(callsStarted.await(10, TimeUnit.SECONDS), "the stream's handler started");
    // gRPC may still hand more of the stream's own work (a callback) to a worker after its handler
    // has started: a nanosecond on, wait for such work to have run before the idle second.
    clock.advance(1);
    long bound = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (delayNow() != 0 && System.nanoTime() < bound) {
      Thread.onSpinWait();
    }
    clock.advance(1_000 * MS - 1); // a second of an open stream with nothing sent
    assertEquals(0, delayNow());
    Calls.Reply other = Calls.unary(ch, Echo.UNARY, "x").await();
    assertEquals(Status.Code.OK, other.status().getCode(), other.toString());
    idle.call().halfClose();
    assertEquals(Status.Code.OK, idle.await().status().getCode());
  }

  @Test
  void aUnaryCallWhoseClientStallsAfterItsHeadersIsNoQueueingDelay() throws Exception {
    Channel ch = start();
    Calls.Handle stalled = Calls.start(ch, Echo.UNARY, new Metadata(), false); // headers only
    assertTrue(callsStarted.await(10, TimeUnit.SECONDS), "the call's handler asked for its message");
    clock.advance(1_000 * MS); // a second with nothing sent
    assertEquals(0, delayNow());
    Calls.Reply other = Calls.unary(ch, Echo.UNARY, "x").await();
    assertEquals(Status.Code.OK, other.status().getCode(), other.toString());
    stalled.call().sendMessage("late");
    stalled.call().halfClose();
    Calls.Reply late = stalled.await();
    assertEquals(Status.Code.OK, late.status().getCode(), late.toString());
    assertEquals(0, delayNow(), "the late call, served, waits no more");
  }
}
