package io.spillway.api;

import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * No overload control ({@code none}): the server admits everything and clients send at once. The
 * reference every experiment measures capacity with and every scheme is compared against.
 */
public final class NoControl implements OverloadScheme {

  /** The single instance. */
  public static final NoControl INSTANCE = new NoControl();

  private NoControl() { }

  @Override
  public String name() {
    return "none";
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    OverloadMetrics metrics = environment.metrics();
    return new ServerGate() {
      @Override
      public ServerPermit admit(RequestMetadata request, long nowNanos) {
        metrics.onAdmission(Status.OK);
        return new AbstractServerPermit(Status.OK) {
          @Override
          protected void onComplete(Outcome outcome, long now, ResponseMetadata response) {
            metrics.onCompletion(outcome);
          }
        };
      }

      @Override
      public void deregister(long sessionId, long nowNanos) { }
    };
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    long sessionId = environment.sessionId();
    return new ClientGate<>() {
      private final ArrayDeque<R> queue = new ArrayDeque<>();

      @Override
      public boolean offer(R request, long nowNanos) {
        queue.add(request);
        return true;
      }

      @Override
      public R poll(long nowNanos, RequestMetadata header) {
        R next = queue.poll();
        if (next != null) {
          header.sessionId(sessionId).demand(queue.size());
        }
        return next;
      }

      @Override
      public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) { }

      @Override
      public int expire(long nowNanos, Consumer<? super R> expired) {
        return 0;
      }

      @Override
      public long nextWakeupNanos() {
        return 0;
      }

      @Override
      public int queued() {
        return queue.size();
      }
    };
  }
}
