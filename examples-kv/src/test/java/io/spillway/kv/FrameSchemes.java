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
import io.spillway.api.testing.LeakCheckingServerGate;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/** Schemes for the frame port's tests: a leak-checked wrapper, and a gate that turns every request away. */
final class FrameSchemes {

  static final long WAIT_SECONDS = 20;

  private FrameSchemes() { }

  /** Holds the server gate of the schemes it wraps, checked for leaks. */
  static final class LeakChecks {
    final AtomicReference<LeakCheckingServerGate> gate = new AtomicReference<>();

    /** {@code real}, with its server gate wrapped in a leak-checking one this holder keeps. */
    OverloadScheme wrap(OverloadScheme real) {
      return LeakCheckingServerGate.checking(real, gate::set);
    }

    /** Waits until every permit handed out has ended, then fails if one never did or ended twice. */
    void assertEveryRequestEndedOnce() throws InterruptedException {
      waitUntil(() -> gate.get().outstanding() == 0);
      gate.get().assertNoLeaks();
    }
  }

  /** A gate that rejects every request at once with {@code REJECTED_AQM}, counting them. */
  static final class RejectAll implements OverloadScheme {
    final AtomicInteger seen = new AtomicInteger();

    @Override
    public String name() {
      return "reject-all";
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      return new ServerGate() {
        @Override
        public ServerPermit admit(RequestMetadata request, long nowNanos) {
          seen.incrementAndGet();
          return new AbstractServerPermit(Status.REJECTED_AQM) {
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

  /** Polls a condition another thread makes true; bounded so a bug fails instead of hanging. */
  static void waitUntil(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("condition not reached within " + WAIT_SECONDS + " s");
      }
      Thread.onSpinWait();
      Thread.yield();
    }
  }
}
