package io.spillway.api.testing;

import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;

/**
 * A server gate that passes every call to its delegate: a test gate overrides only what it
 * changes (records a deregistration, refuses some requests, fails to close). Thread-safe as the
 * delegate is.
 */
public class ForwardingServerGate implements ServerGate {

  /** The gate every call goes to unless a subclass decides otherwise. */
  protected final ServerGate delegate;

  public ForwardingServerGate(ServerGate delegate) {
    this.delegate = delegate;
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    return delegate.admit(request, nowNanos);
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
}
