package io.spillway.credit;

import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * jcstress tests of the credit ledger of {@link BreakwaterServerGate} (Breakwater's credits, and
 * the default scheme's, which run on it): two threads race an admission or a completion against a
 * deregistration, the control loop, an idle eviction or a demand report. Afterwards C_issued must
 * equal the sum of the sessions' windows (breakwater-osdi20 §3.2: credits issued on admission and
 * on responses, returned on deregistration and eviction, revoked by eq. 6), and once every permit
 * is completed and every session deregistered, C_issued and n_c must both be 0.
 *
 * <p>Each outcome is (C_issued − Σ windows, C_issued after draining, n_c after draining); only
 * (0, 0, 0) is acceptable.
 */
public final class CreditLedgerStress {

  private CreditLedgerStress() {}

  private static final long SECOND = 1_000_000_000L;
  private static final long START = 1_000_000 * SECOND;
  private static final int SESSIONS = 3;
  private static final String BALANCED = "the ledger balances and drains to 0";
  private static final String LEAKED = "credits leaked or were counted twice";

  /** A gate in virtual time (nothing scheduled; the actors run its control loop themselves). */
  static final class Ledger {
    final BreakwaterServerGate gate;
    private final ConcurrentLinkedQueue<ServerPermit> open = new ConcurrentLinkedQueue<>();

    /**
     * With {@code defaultRules}, the default scheme's pool rules (follows the credits out, grows
     * only while used, the queue's share of the SLO) and a per-session cap of 2, so that windows
     * pass the cap as a share and give credits back while a session within it is short.
     */
    Ledger(boolean defaultRules) {
      ServerEnvironment environment = new ServerEnvironment(() -> START, (task, delay) -> () -> { },
          t -> 0, (session, delta) -> { }, OverloadMetrics.NONE, 4);
      BreakwaterConfig config = BreakwaterConfig.forSlo(200_000, 10_000);
      gate = defaultRules
          ? new BreakwaterServerGate(config.toBuilder().perSessionCap(2).build(), environment,
              false, 10_000, true, true, new QueueShare(200_000, config.targetDelayNanos(),
                  config.dropThresholdNanos()))
          : new BreakwaterServerGate(config, environment);
    }

    /** Sends a request; an admitted one is completed at once or kept open. */
    void request(long session, int demand, boolean complete, long now) {
      ServerPermit p = gate.admit(new RequestMetadata().sessionId(session).demand(demand), now);
      if (!p.isAdmitted()) {
        p.complete(io.spillway.api.Outcome.DROPPED, now, new ResponseMetadata());
      } else if (complete) {
        p.complete(io.spillway.api.Outcome.SUCCESS, now, new ResponseMetadata());
      } else {
        open.add(p);
      }
    }

    /** Completes the oldest open permit, if any. */
    void completeOne(long now) {
      ServerPermit p = open.poll();
      if (p != null) {
        p.complete(io.spillway.api.Outcome.SUCCESS, now, new ResponseMetadata());
      }
    }

    /** Checks the ledger, drains it, and writes the outcome. */
    void check(III_Result r, long now) {
      long windows = 0;
      for (int s = 1; s <= SESSIONS; s++) {
        windows += Math.max(0, gate.windowOf(s));
      }
      r.r1 = (int) (gate.issuedCredits() - windows);
      for (ServerPermit p; (p = open.poll()) != null; ) {
        p.complete(io.spillway.api.Outcome.SUCCESS, now, new ResponseMetadata());
      }
      for (int s = 1; s <= SESSIONS; s++) {
        gate.deregister(s, now);
      }
      r.r2 = (int) gate.issuedCredits();
      r.r3 = gate.sessionCount();
    }
  }

  /** An admission on a session while another thread deregisters it. */
  @JCStressTest
  @Description("Admission and completion against a deregistration of the same session")
  @Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = BALANCED)
  @Outcome(expect = Expect.FORBIDDEN, desc = LEAKED)
  @State
  public static class AdmitVersusDeregister {
    private final Ledger ledger = new Ledger(false);

    public AdmitVersusDeregister() {
      ledger.request(1, 4, true, START);
    }

    @Actor
    public void admit() {
      ledger.request(1, 4, true, START);
    }

    @Actor
    public void deregister() {
      ledger.gate.deregister(1, START);
    }

    @Arbiter
    public void ledger(III_Result r) {
      ledger.check(r, START);
    }
  }

  /** An admission while the control loop resizes the pool and revokes by eq. 6. */
  @JCStressTest
  @Description("Admission and completion against a control period")
  @Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = BALANCED)
  @Outcome(expect = Expect.FORBIDDEN, desc = LEAKED)
  @State
  public static class AdmitVersusControlLoop {
    private final Ledger ledger = new Ledger(false);

    public AdmitVersusControlLoop() {
      ledger.request(1, 4, false, START);
      ledger.request(2, 6, true, START);
    }

    @Actor
    public void admit() {
      ledger.request(1, 4, true, START);
    }

    @Actor
    public void controlPeriod() {
      ledger.gate.updatePool(START + 4 * SECOND);
    }

    @Arbiter
    public void ledger(III_Result r) {
      ledger.check(r, START + 4 * SECOND);
    }
  }

  /**
   * An admission on an idle session while the control loop evicts idle sessions (10 s idle with
   * nothing in flight): the session is either evicted before the admission re-registers it, or
   * kept; either way its credits are counted once.
   */
  @JCStressTest
  @Description("Admission against an idle eviction, on the default scheme's rules")
  @Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = BALANCED)
  @Outcome(expect = Expect.FORBIDDEN, desc = LEAKED)
  @State
  public static class AdmitVersusEviction {
    private static final long LATER = START + 30 * SECOND;
    private final Ledger ledger = new Ledger(true);

    public AdmitVersusEviction() {
      ledger.request(1, 4, true, START);
      ledger.request(2, 4, true, START);
    }

    @Actor
    public void admit() {
      ledger.request(1, 4, true, LATER);
    }

    @Actor
    public void evict() {
      ledger.gate.evictIdleSessions(LATER);
    }

    @Arbiter
    public void ledger(III_Result r) {
      ledger.check(r, LATER);
    }
  }

  /** Two sessions admitted at once, one of them kept open, on the default scheme's rules. */
  @JCStressTest
  @Description("Two sessions' admissions, on the default scheme's rules")
  @Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = BALANCED)
  @Outcome(expect = Expect.FORBIDDEN, desc = LEAKED)
  @State
  public static class TwoSessions {
    private final Ledger ledger = new Ledger(true);

    @Actor
    public void first() {
      ledger.request(1, 6, false, START);
    }

    @Actor
    public void second() {
      ledger.request(2, 6, true, START);
    }

    @Arbiter
    public void ledger(III_Result r) {
      ledger.check(r, START);
    }
  }

  /** A demand report (eq. 4's d_c) while the same session's open request completes. */
  @JCStressTest
  @Description("A demand report against a completion on the same session, default rules")
  @Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = BALANCED)
  @Outcome(expect = Expect.FORBIDDEN, desc = LEAKED)
  @State
  public static class DemandVersusCompletion {
    private final Ledger ledger = new Ledger(true);

    public DemandVersusCompletion() {
      ledger.request(1, 2, false, START);
    }

    @Actor
    public void demand() {
      ledger.gate.onDemand(1, 6, START);
    }

    @Actor
    public void complete() {
      ledger.completeOne(START);
    }

    @Arbiter
    public void ledger(III_Result r) {
      ledger.check(r, START);
    }
  }
}
