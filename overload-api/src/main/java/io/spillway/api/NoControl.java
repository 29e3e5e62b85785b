package io.spillway.api;

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
    return ClientGate.sendAtOnce(environment);
  }
}
