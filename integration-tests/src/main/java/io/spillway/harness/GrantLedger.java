package io.spillway.harness;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.ControlChannel;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * A credit scheme whose server gate keeps, per session, what the gate granted and what it holds:
 * the credits the session was given (one with its registering request, then every signed credit
 * delta the gate put on an answer or sent in an explicit message), and its requests in the server
 * (admitted, or dropped by AQM, and not yet answered: what the gate counts against the window).
 * From these it checks, at every arrival, the window rule of Breakwater's server (§3.2): a session
 * is admitted only while it has less in the server than the most it was ever granted, and refused
 * for credit only while it has at least its whole grant in the server. A revocation leaves the old
 * window the limit until the client has read it (see {@code BreakwaterServerGate}), hence the most
 * ever granted as the bound for admissions.
 *
 * <p>An arrival and an answer of the same session are recorded under the session's account with
 * the gate's own decision inside, so the ledger never sees a window the gate has not applied yet;
 * explicit credits (the gate's control loop) are recorded as they are sent, after the gate has
 * applied them, so they can only make an admission look more legitimate for a moment, never a
 * refusal less.
 *
 * <p>It also counts, per session, the deregistrations that reached the gate: the sessions the
 * transport ended, by a deregister frame on the connection that owns the session or by that
 * connection closing. A session ended so loses its account, and its credits return to the pool.
 * One server per instance; thread-safe.
 */
public final class GrantLedger implements OverloadScheme {

  /** What the gate granted one session and holds of it. Guarded by its monitor. */
  public static final class Account {
    private long granted;
    private long peakGranted;
    private long inServer;
    private long maxInServer;
    private long admitted;
    private long refusedForCredit;
    private long admittedBeyondGrant;
    private long refusedWithRoom;

    /** Credits granted and not taken back, as the gate's answers said. */
    public synchronized long granted() {
      return granted;
    }

    /** The most {@link #granted()} has been. */
    public synchronized long peakGranted() {
      return peakGranted;
    }

    /** Requests counted against the window and not yet answered. */
    public synchronized long inServer() {
      return inServer;
    }

    /** The most requests it had in the server at once. */
    public synchronized long maxInServer() {
      return maxInServer;
    }

    /** Requests counted against its window (served or dropped by AQM). */
    public synchronized long admitted() {
      return admitted;
    }

    /** Requests refused {@link Status#REJECTED_NO_CREDIT}. */
    public synchronized long refusedForCredit() {
      return refusedForCredit;
    }

    /** Admissions with more in the server than it was ever granted (0 when the rule holds). */
    public synchronized long admittedBeyondGrant() {
      return admittedBeyondGrant;
    }

    /** Refusals for credit with less in the server than granted (0 when the rule holds). */
    public synchronized long refusedWithRoom() {
      return refusedWithRoom;
    }

    @Override
    public synchronized String toString() {
      return "admitted=" + admitted + " refusedForCredit=" + refusedForCredit + " granted=" + granted
          + " peakGranted=" + peakGranted + " maxInServer=" + maxInServer + " inServer=" + inServer
          + " admittedBeyondGrant=" + admittedBeyondGrant + " refusedWithRoom=" + refusedWithRoom;
    }
  }

  private static final int MAX_VIOLATIONS = 20;

  private final OverloadScheme delegate;
  private final ConcurrentHashMap<Long, Account> accounts = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Long, LongAdder> deregistered = new ConcurrentHashMap<>();
  private final LongAdder deregistrations = new LongAdder();
  private final List<String> violations = new ArrayList<>();

  /** Keeps the ledger of {@code delegate}'s server gate; its client gates are the delegate's. */
  public GrantLedger(OverloadScheme delegate) {
    this.delegate = delegate;
  }

  /** The account of a session, or null if it never sent a request (or deregistered). */
  public Account account(long sessionId) {
    return accounts.get(sessionId);
  }

  /** How many times the gate was told to deregister {@code sessionId}. */
  public long deregistrations(long sessionId) {
    LongAdder n = deregistered.get(sessionId);
    return n == null ? 0 : n.sum();
  }

  /** How many times the gate was told to deregister a session, any session. */
  public long deregistrations() {
    return deregistrations.sum();
  }

  /** The first arrivals that broke the window rule, described (empty when it held). */
  public List<String> violations() {
    synchronized (violations) {
      return List.copyOf(violations);
    }
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public boolean issuesCredits() {
    return delegate.issuesCredits();
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return delegate.newClientGate(environment);
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    ControlChannel control = environment.control();
    ControlChannel recorded = (sessionId, creditDelta) -> {
      Account a = accounts.get(sessionId);
      if (a != null) {
        synchronized (a) {
          grant(a, creditDelta);
        }
      }
      control.sendCredit(sessionId, creditDelta);
    };
    return new Gate(delegate.newServerGate(new ServerEnvironment(environment.ticker(),
        environment.scheduler(), environment.queueDelay(), recorded, environment.metrics(),
        environment.parallelism(), environment.reportsStarts())));
  }

  private static void grant(Account a, long delta) {
    a.granted += delta;
    a.peakGranted = Math.max(a.peakGranted, a.granted);
  }

  private void violation(String what) {
    synchronized (violations) {
      if (violations.size() < MAX_VIOLATIONS) {
        violations.add(what);
      }
    }
  }

  private final class Gate implements ServerGate {
    private final ServerGate inner;

    Gate(ServerGate inner) {
      this.inner = inner;
    }

    @Override
    public ServerPermit admit(RequestMetadata request, long nowNanos) {
      long id = request.sessionId();
      Account a = accounts.get(id);
      boolean created = false;
      if (a == null) {
        Account fresh = new Account();
        grant(fresh, 1); // the registering request carries its own credit (Breakwater §3)
        a = accounts.putIfAbsent(id, fresh);
        created = a == null;
        if (created) {
          a = fresh;
        }
      }
      synchronized (a) {
        ServerPermit permit = inner.admit(request, nowNanos);
        boolean counted = permit.status() != Status.REJECTED_NO_CREDIT;
        if (created && !counted) {
          // A registration the gate declined (too many new sessions on the connection): nothing
          // was granted, so there is no account to keep.
          accounts.remove(id, a);
          return permit;
        }
        if (counted) {
          a.admitted++;
          a.inServer++;
          a.maxInServer = Math.max(a.maxInServer, a.inServer);
          if (a.inServer > a.peakGranted) {
            a.admittedBeyondGrant++;
            violation("session " + id + " admitted with " + a.inServer + " in the server, more than the "
                + a.peakGranted + " it was ever granted");
          }
        } else {
          a.refusedForCredit++;
          if (a.inServer < a.granted) {
            a.refusedWithRoom++;
            violation("session " + id + " refused for credit with " + a.inServer
                + " in the server and " + a.granted + " granted");
          }
        }
        return new Permit(permit, a, counted);
      }
    }

    @Override
    public void onDemand(long sessionId, int demand, long nowNanos) {
      inner.onDemand(sessionId, demand, nowNanos);
    }

    @Override
    public void deregister(long sessionId, long nowNanos) {
      deregistered.computeIfAbsent(sessionId, k -> new LongAdder()).increment();
      deregistrations.increment();
      Account a = accounts.get(sessionId);
      if (a == null) {
        inner.deregister(sessionId, nowNanos);
        return;
      }
      synchronized (a) {
        inner.deregister(sessionId, nowNanos);
        accounts.remove(sessionId, a); // a session that comes back registers again, with one credit
      }
    }

    @Override
    public void start() {
      inner.start();
    }

    @Override
    public void close() {
      inner.close();
    }
  }

  private static final class Permit implements ServerPermit {
    private final ServerPermit inner;
    private final Account account;
    private final boolean counted;

    Permit(ServerPermit inner, Account account, boolean counted) {
      this.inner = inner;
      this.account = account;
      this.counted = counted;
    }

    @Override
    public boolean isAdmitted() {
      return inner.isAdmitted();
    }

    @Override
    public Status status() {
      return inner.status();
    }

    @Override
    public boolean isCompleted() {
      return inner.isCompleted();
    }

    @Override
    public void started(long nowNanos) {
      inner.started(nowNanos);
    }

    @Override
    public void complete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      synchronized (account) {
        inner.complete(outcome, nowNanos, response);
        if (counted) {
          account.inServer--;
        }
        grant(account, response.creditDelta());
      }
    }
  }
}
