package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ClientInterceptors;
import io.grpc.Status;
import io.spillway.api.ClientGate;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayDeque;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * A client gate whose answer handling throws (a scheme's bug, or a listener it calls) does not
 * keep the application from hearing its call's end.
 */
class ThrowingClientGateTest {

  private final VirtualClock clock = new VirtualClock();

  /** Sends every call at once; throws on every answer. */
  private static final class ThrowingGate implements ClientGate<Object> {
    private final ArrayDeque<Object> queue = new ArrayDeque<>();

    @Override
    public boolean offer(Object request, long arrivalNanos, long nowNanos) {
      return queue.add(request);
    }

    @Override
    public Object poll(long nowNanos, RequestMetadata header) {
      return queue.poll();
    }

    @Override
    public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
      throw new IllegalArgumentException("gate broke");
    }

    @Override
    public void onUnanswered(ResponseMetadata response, long sentAtNanos, long nowNanos) {
      throw new IllegalArgumentException("gate broke");
    }

    @Override
    public int expire(long nowNanos, Consumer<? super Object> expired) {
      return 0;
    }

    @Override
    public long nextWakeupNanos() {
      return Long.MAX_VALUE;
    }

    @Override
    public int queued() {
      return queue.size();
    }
  }

  @Test
  void theApplicationHearsTheEndOfACallWhoseAnswerTheGateFailsOn() {
    SpillwayClientInterceptor session = new SpillwayClientInterceptor(new ThrowingGate(), 7, false,
        clock, clock, new InterfaceRegistry());
    try (InProcess server = new InProcess(Echo.service(Echo.ECHO))) {
      Calls.Handle call = Calls.unary(ClientInterceptors.intercept(server.channel(), session),
          Echo.UNARY, "x");
      assertTrue(call.reply().isDone(), "the application never heard its call end");
      assertEquals(Status.Code.OK, call.await().status().getCode());
    }
  }
}
