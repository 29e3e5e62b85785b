package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A queued call that expires ends in its listener's {@code onClose}, application code that may
 * block. The session's timer serves every session of the process (the shared timer thread, here
 * the virtual clock's advancing thread): one application's slow callback must not hold back
 * another session's expiry (virtual time; the latch waits only bound a hang).
 */
class ExpiryCallbacksTest {

  private static final long MS = 1_000_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000 * MS);

  private SpillwayClientInterceptor session(long id, long timeoutNanos) {
    WindowClientGate gate = new WindowClientGate(id, timeoutNanos);
    gate.window = 0; // no credit: calls wait until they expire
    return new SpillwayClientInterceptor(gate, id, false, clock, clock,
        InterfaceRegistry.of(Echo.DESCRIPTOR));
  }

  @Test
  void aSlowOnCloseInOneSessionDoesNotHoldBackAnotherSessionsExpiry() throws Exception {
    try (InProcess grpc = new InProcess(Echo.service(Echo.ECHO))) {
      Channel toA = ClientInterceptors.intercept(grpc.channel(), session(1, 20 * MS));
      Channel toB = ClientInterceptors.intercept(grpc.channel(), session(2, 40 * MS));
      CountDownLatch bEnded = new CountDownLatch(1);
      CompletableFuture<Boolean> aSawBEnd = new CompletableFuture<>();
      ClientCall<String, String> a = toA.newCall(Echo.UNARY, CallOptions.DEFAULT);
      a.start(new ClientCall.Listener<>() {
        @Override
        public void onClose(Status status, Metadata trailers) {
          try { // an application callback that blocks until B's call has ended
            aSawBEnd.complete(bEnded.await(2, TimeUnit.SECONDS));
          } catch (InterruptedException e) {
            aSawBEnd.completeExceptionally(e);
          }
        }
      }, new Metadata());
      a.request(1);
      a.sendMessage("a");
      a.halfClose();
      Calls.Handle b = Calls.unary(toB, Echo.UNARY, "b");
      b.reply().whenComplete((r, e) -> bEnded.countDown());

      clock.advance(40 * MS); // A's call expires at 20 ms, B's at 40 ms

      Calls.Reply bReply = b.await();
      assertEquals("spillway: expired in the client queue", bReply.status().getDescription());
      assertTrue(aSawBEnd.get(10, TimeUnit.SECONDS),
          "B's call expired only once A's onClose had returned, not while it blocked");
    }
  }
}
