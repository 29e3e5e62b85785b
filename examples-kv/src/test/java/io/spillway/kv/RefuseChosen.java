package io.spillway.kv;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A text-port gate ({@link KvServer.Builder#textSchemeWrapper}) that admits every data command
 * except the ones it is told to refuse, by their position among the admissions after {@link
 * #refuse}: the server then answers them as it answers any refusal, so a test sees exactly the
 * reply an overloaded server sends, for the command it chose.
 */
final class RefuseChosen implements OverloadScheme {

  private final AtomicInteger seen = new AtomicInteger();
  private final AtomicInteger refused = new AtomicInteger();
  private volatile Set<Integer> chosen = Set.of();

  /**
   * Refuses the admissions numbered {@code positions} (1 for the next data command) from now on,
   * and admits every other.
   */
  void refuse(Integer... positions) {
    chosen = Set.of();
    seen.set(0);
    chosen = Set.of(positions);
  }

  /** Admits everything from now on. */
  void admitAll() {
    chosen = Set.of();
  }

  /** Commands refused so far. */
  int refused() {
    return refused.get();
  }

  @Override
  public String name() {
    return "refuse-chosen";
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    return new ServerGate() {
      @Override
      public ServerPermit admit(RequestMetadata request, long nowNanos) {
        boolean refuse = chosen.contains(seen.incrementAndGet());
        if (refuse) {
          refused.incrementAndGet();
        }
        return new AbstractServerPermit(refuse ? Status.REJECTED_AQM : Status.OK) {
          @Override
          protected void onComplete(Outcome outcome, long now, ResponseMetadata response) { }
        };
      }

      @Override
      public void deregister(long sessionId, long nowNanos) { }
    };
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return NoControl.INSTANCE.newClientGate(environment);
  }
}
