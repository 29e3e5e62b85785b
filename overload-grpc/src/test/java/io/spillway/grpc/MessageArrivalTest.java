package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.spillway.api.Ticker;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A unary call counts as queueing while the server holds its request message back, and not while
 * its client has not sent it: the call's loop tells the two apart once it has handled the
 * handler's request for the message. Literal times; the loop is a queue run by hand, then a real
 * Netty server.
 */
class MessageArrivalTest {

  private static final long MS = 1_000_000;
  private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 2 * MS); // the ticker may wrap
  private final Ticker ticker = now::get;
  private final UnstartedCalls unstarted = new UnstartedCalls();
  private final ArrayDeque<Runnable> loop = new ArrayDeque<>();

  private MessageArrival admitted(java.util.concurrent.Executor loopOrNull) {
    MessageArrival arrival = new MessageArrival(new Metadata(), loopOrNull, unstarted, ticker);
    arrival.admitted(unstarted.arrived(now.get()));
    return arrival;
  }

  private long delay() {
    return unstarted.queueingDelayNanos(now.get());
  }

  private void runLoop() {
    for (Runnable task; (task = loop.poll()) != null; ) {
      task.run();
    }
  }

  @Test
  void aMessageTheLoopIsSlowToDeliverIsCountedThroughout() {
    MessageArrival call = admitted(loop::add);
    now.addAndGet(MS);
    call.handlerAsked();
    now.addAndGet(3 * MS); // the loop has not got to the handler's request yet
    assertEquals(4 * MS, delay());
    call.inboundMessageRead(0, 10, 10); // the loop reads the message...
    runLoop(); // ...and then confirms nothing
    now.addAndGet(MS);
    assertEquals(5 * MS, delay(), "counted from its admission");
    unstarted.started(call.end());
    assertEquals(0, delay());
  }

  @Test
  void aMessageMissingWhenTheLoopHasHandledTheRequestIsTheClientsWait() {
    MessageArrival call = admitted(loop::add);
    now.addAndGet(MS);
    call.handlerAsked();
    assertEquals(MS, delay(), "until the loop has handled the request");
    runLoop();
    assertEquals(0, delay());
    now.addAndGet(1_000 * MS); // a second with nothing sent
    assertEquals(0, delay());
    call.inboundMessageRead(0, 10, 10);
    now.addAndGet(200);
    assertEquals(200, delay(), "counted again from the message's arrival");
    call.inboundMessageRead(1, 10, 10); // a later message changes nothing
    assertEquals(200, delay());
    unstarted.started(call.end());
    assertEquals(0, delay());
  }

  @Test
  void aCallThatEndsBeforeItsMessageIsNotCountedAgain() {
    MessageArrival call = admitted(loop::add);
    call.handlerAsked();
    runLoop();
    unstarted.started(call.end()); // cancelled by its client
    call.inboundMessageRead(0, 10, 10);
    now.addAndGet(MS);
    assertEquals(0, delay());
  }

  @Test
  void aMessageReadBeforeTheHandlerAsksNeedsNoLoopTask() {
    MessageArrival call = admitted(loop::add);
    call.inboundMessageRead(0, 10, 10);
    call.handlerAsked();
    assertTrue(loop.isEmpty());
    now.addAndGet(2 * MS);
    assertEquals(2 * MS, delay());
    unstarted.started(call.end());
    assertEquals(0, delay());
  }

  @Test
  void withoutALoopAMissingMessageIsTheClientsAtOnce() {
    MessageArrival call = admitted(null);
    now.addAndGet(MS);
    call.handlerAsked();
    assertEquals(0, delay());
    call.inboundMessageRead(0, 10, 10);
    now.addAndGet(MS);
    assertEquals(MS, delay());
    unstarted.started(call.end());
  }

  /**
   * The same on a real Netty server: a client sends a unary call's headers and then stalls. (A
   * grpc-java client never does: it holds a unary call's headers until its message, so the stall
   * is written here as raw HTTP/2 frames.)
   */
  @Test
  void aStalledClientOnSocketsHoldsNoOneElseBack() throws Exception {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 120_000 * MS);
    CountDownLatch handlerAsked = new CountDownLatch(1);
    CountDownLatch servedLate = new CountDownLatch(1);
    ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(Echo.service((m, request, out) -> {
      if (request.equals("late")) {
        servedLate.countDown();
      }
      Echo.ECHO.handle(m, request, out);
    }));
    SpillwayGrpcServer spillway = SpillwayGrpc.server(Spillway.forSloNanos(5 * MS)).sloMillis(5)
        .ticker(clock).scheduler(clock).parallelism(2).install(builder);
    builder.intercept(new ServerInterceptor() { // runs first: sees the others return
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        ServerCall.Listener<Q> listener = next.startCall(call, headers);
        handlerAsked.countDown();
        return listener;
      }
    });
    Server server = builder.build().start();
    ManagedChannel channel = ManagedChannelBuilder.forAddress("localhost", server.getPort())
        .usePlaintext().build();
    try (Socket raw = new Socket("localhost", server.getPort())) {
      OutputStream out = raw.getOutputStream();
      out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      frame(out, 4, 0, 0, new byte[0]); // SETTINGS
      ByteArrayOutputStream block = new ByteArrayOutputStream();
      String[] fields = {":method", "POST", ":scheme", "http", ":path", "/test.Echo/Unary",
          ":authority", "localhost", "content-type", "application/grpc", "te", "trailers"};
      for (int f = 0; f < fields.length; f += 2) { // HPACK: literal, never indexed, new name
        block.write(0x10);
        block.write(fields[f].length());
        block.writeBytes(fields[f].getBytes(StandardCharsets.US_ASCII));
        block.write(fields[f + 1].length());
        block.writeBytes(fields[f + 1].getBytes(StandardCharsets.US_ASCII));
      }
      frame(out, 1, 0x4, 1, block.toByteArray()); // HEADERS, END_HEADERS, stream 1: no message
      assertTrue(handlerAsked.await(10, TimeUnit.SECONDS), "the stalled call's handler started");
      clock.advance(1_000 * MS); // a second with nothing sent
      long bound = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (spillway.queueDelay().queueingDelayNanos(clock.read()) != 0 && System.nanoTime() < bound) {
        Thread.onSpinWait(); // the loop's confirmation runs on the loop
      }
      assertEquals(0, spillway.queueDelay().queueingDelayNanos(clock.read()),
          "the stalled call holds the signal up");
      Calls.Reply other = Calls.unary(channel, Echo.UNARY, "x").await();
      assertEquals(Status.Code.OK, other.status().getCode(), other.toString());
      byte[] message = {0, 0, 0, 0, 4, 'l', 'a', 't', 'e'}; // gRPC: uncompressed, 4 bytes
      frame(out, 0, 0x1, 1, message); // DATA, END_STREAM
      assertTrue(servedLate.await(10, TimeUnit.SECONDS), "the late call is served");
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }

  /** Writes one HTTP/2 frame (RFC 9113 §4.1). */
  private static void frame(OutputStream out, int type, int flags, int stream, byte[] payload)
      throws java.io.IOException {
    out.write(new byte[] {(byte) (payload.length >>> 16), (byte) (payload.length >>> 8),
        (byte) payload.length, (byte) type, (byte) flags, (byte) (stream >>> 24),
        (byte) (stream >>> 16), (byte) (stream >>> 8), (byte) stream});
    out.write(payload);
    out.flush();
  }
}
