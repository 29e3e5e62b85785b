package io.spillway.harness;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.credit.BreakwaterServerGate;

/**
 * A scheme whose server gate is wrapped in a {@link LeakCheckingServerGate}, keeping both the
 * checker and the scheme's own gate (for its credit ledger) at hand. One server per instance.
 */
final class LeakCheckingScheme implements OverloadScheme {

  private final OverloadScheme delegate;
  private volatile ServerGate inner;
  private volatile LeakCheckingServerGate checker;

  LeakCheckingScheme(OverloadScheme delegate) {
    this.delegate = delegate;
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    inner = delegate.newServerGate(environment);
    checker = new LeakCheckingServerGate(inner);
    return checker;
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return delegate.newClientGate(environment);
  }

  @Override
  public boolean issuesCredits() {
    return delegate.issuesCredits();
  }

  LeakCheckingServerGate checker() {
    return checker;
  }

  /** C_issued of a Breakwater (or Protego-backed) gate. */
  long issuedCredits() {
    return ((BreakwaterServerGate) inner).issuedCredits();
  }

  /** n_c, sessions the gate holds. */
  int sessions() {
    return ((BreakwaterServerGate) inner).sessionCount();
  }

  /** One line of the gate's ledger, for the fault table and the child server's reports. */
  String ledger() {
    return "admitted=" + checker.admitted() + " outstanding=" + checker.outstanding()
        + " issued=" + issuedCredits() + " sessions=" + sessions();
  }
}
