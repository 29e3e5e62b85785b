package io.spillway.api.testing;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Wraps a gate and remembers every permit it hands out, so a test can assert that each one was
 * completed exactly once: {@link #assertNoLeaks()} fails naming the permits never completed, and a
 * second completion fails at once (the real permit throws; this wrapper also records it). A
 * completion the permit refuses without taking it leaves the permit open here too.
 *
 * <p>Thread-safe.
 */
public final class LeakCheckingServerGate implements ServerGate {

  private final ServerGate delegate;
  private final Map<ServerPermit, String> open = Collections.synchronizedMap(new IdentityHashMap<>());
  private final List<String> doubleCompletions = Collections.synchronizedList(new ArrayList<>());
  private long issued;
  private long admitted;
  private long withoutSession;

  public LeakCheckingServerGate(ServerGate delegate) {
    this.delegate = delegate;
  }

  /**
   * {@code scheme} with each server gate it makes wrapped in a checker, handed to {@code checkers}
   * as it is made (on the thread that asks the scheme for a gate); its client gates unchanged.
   */
  public static OverloadScheme checking(OverloadScheme scheme, Consumer<LeakCheckingServerGate> checkers) {
    return new OverloadScheme() {
      @Override
      public String name() {
        return scheme.name();
      }

      @Override
      public ServerGate newServerGate(ServerEnvironment environment) {
        LeakCheckingServerGate checker = new LeakCheckingServerGate(scheme.newServerGate(environment));
        checkers.accept(checker);
        return checker;
      }

      @Override
      public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
        return scheme.newClientGate(environment);
      }

      @Override
      public boolean issuesCredits() {
        return scheme.issuesCredits();
      }
    };
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    ServerPermit permit = delegate.admit(request, nowNanos);
    if (permit == null) {
      throw new AssertionError("admit returned null for " + request);
    }
    String label = "session " + request.sessionId() + " request " + request.requestId() + " " + permit.status();
    synchronized (this) {
      issued++;
      if (request.sessionId() == 0) {
        withoutSession++;
      }
      if (permit.isAdmitted()) {
        admitted++;
      }
    }
    Tracked tracked = new Tracked(permit, label);
    open.put(tracked, label);
    return tracked;
  }

  @Override
  public void onDemand(long sessionId, int demand, long nowNanos) {
    delegate.onDemand(sessionId, demand, nowNanos);
  }

  @Override
  public void deregister(long sessionId, long nowNanos) {
    delegate.deregister(sessionId, nowNanos);
  }

  @Override
  public void start() {
    delegate.start();
  }

  @Override
  public void close() {
    delegate.close();
  }

  /** Permits handed out so far. */
  public synchronized long issued() {
    return issued;
  }

  /** Permits handed out for requests that carried no session (clients that do not speak Spillway). */
  public synchronized long issuedWithoutSession() {
    return withoutSession;
  }

  /** Permits handed out that admitted their request. */
  public synchronized long admitted() {
    return admitted;
  }

  /** Permits handed out and not completed yet. */
  public int outstanding() {
    return open.size();
  }

  /** Fails if any permit is still open or was completed twice. */
  public void assertNoLeaks() {
    if (!doubleCompletions.isEmpty()) {
      throw new AssertionError("permits completed twice: " + doubleCompletions);
    }
    synchronized (open) {
      if (!open.isEmpty()) {
        List<String> some = open.values().stream().limit(10).toList();
        throw new AssertionError(open.size() + " permits never completed, e.g. " + some);
      }
    }
  }

  private final class Tracked implements ServerPermit {
    private final ServerPermit permit;
    private final String label;

    Tracked(ServerPermit permit, String label) {
      this.permit = permit;
      this.label = label;
    }

    @Override
    public boolean isAdmitted() {
      return permit.isAdmitted();
    }

    @Override
    public Status status() {
      return permit.status();
    }

    @Override
    public boolean isCompleted() {
      return permit.isCompleted();
    }

    @Override
    public void started(long nowNanos) {
      permit.started(nowNanos);
    }

    /**
     * A completion is counted as the call starts, before the scheme's completion runs (it may
     * release whatever a test waits on), and given back if the permit refuses it without taking
     * it: a call refused for its arguments (a rejected request ended as SUCCESS, a null response)
     * leaves the permit open, as {@link io.spillway.api.AbstractServerPermit#complete} documents,
     * so it stays a leak until completed properly, and that later completion is its first. A call
     * on a permit this wrapper has seen completed is a second one, whether the permit throws
     * {@link IllegalStateException} or, in a faulty scheme, takes it; of two racing calls exactly
     * one is recorded.
     */
    @Override
    public void complete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      boolean first = open.remove(this) != null;
      try {
        permit.complete(outcome, nowNanos, response);
      } catch (RuntimeException | Error e) {
        if (!permit.isCompleted()) {
          if (first) {
            open.put(this, label); // refused, not taken: still open
          }
        } else if (!first) {
          doubleCompletions.add(label);
        }
        throw e;
      }
      if (!first) {
        doubleCompletions.add(label);
      }
    }
  }
}
