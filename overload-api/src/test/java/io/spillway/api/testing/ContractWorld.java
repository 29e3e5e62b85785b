package io.spillway.api.testing;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.TimestampedQueue;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A small closed world for the admission contract: clients with the scheme's client gates, a
 * server with the scheme's server gate (wrapped in a {@link LeakCheckingServerGate}), a fixed
 * number of workers with a fixed service time, and a network with a fixed RTT, all on one
 * {@link VirtualClock}. Arrivals are Poisson at a rate the test sets; everything is deterministic
 * for the seed.
 *
 * <p>It records what the contract checks: every request issued ends exactly once at its client
 * (served, rejected or expired), and a credit scheme's client never has more requests in flight
 * than the credits it has been granted.
 */
public final class ContractWorld {

  /** A request as the world tracks it. */
  private static final class Call {
    final Client client;
    final long issuedAt;
    long sentAt;
    ServerPermit permit;
    boolean ended;

    Call(Client client, long issuedAt) {
      this.client = client;
      this.issuedAt = issuedAt;
    }
  }

  private final class Client {
    final long sessionId;
    final ClientGate<Call> gate;
    long granted;
    int inFlight;
    long wakeupAt = Long.MIN_VALUE;
    /** The server's side of the ledger: credits granted so far, including those still on their way. */
    long grantedByServer;
    /** The most {@link #grantedByServer} has been. */
    long peakGrantedByServer;
    boolean knownToServer;
    /** Requests of this client admitted and not yet answered. */
    int inServer;
    /** Ignores its gate: keeps {@link #greedyOutstanding} requests in flight, whatever it is granted. */
    boolean greedy;
    int greedyOutstanding;
    /**
     * With {@link #greedy}: each request carries a session id never used before (a registering
     * one), so the client never spends a window of its own ({@link #floodSessions}).
     */
    boolean freshSessions;
    /** Keeps this many requests of its own issued and not ended, through its gate (0: off). */
    int closedLoop;
    long servedOk;
    long good;
    /** For {@link #accounting}: admissions within the window the server granted, and beyond it. */
    long admittedWithin;
    long admittedBeyond;
    long refusedForCredit;
    long grows;
    long shrinks;
    /** Time integrals (ns · count) of {@link #grantedByServer} and {@link #inServer}. */
    long markedAt = Long.MIN_VALUE;
    double windowIntegral;
    double inServerIntegral;

    Client(long sessionId, ClientGate<Call> gate) {
      this.sessionId = sessionId;
      this.gate = gate;
    }
  }

  private final OverloadScheme scheme;
  private final VirtualClock clock;
  private final long halfRtt;
  private final long serviceNanos;
  private final long sloNanos;
  private final LeakCheckingServerGate gate;
  private final TimestampedQueue<Call> runQueue = new TimestampedQueue<>();
  private final List<Client> clients = new ArrayList<>();
  private final SplittableRandom random;
  private int idleWorkers;
  private double ratePerNano;
  private io.spillway.api.Cancellable nextArrival;

  private long issued;
  private long served;
  private long expired;
  private long endedTwice;
  private final Map<Status, Long> rejected = new EnumMap<>(Status.class);
  private final List<String> grantViolations = new ArrayList<>();
  private final List<String> serverViolations = new ArrayList<>();

  /**
   * @param origin the clock's reading at the start (use one near {@link Long#MAX_VALUE} to test
   *     wrap-around)
   */
  public ContractWorld(OverloadScheme scheme, long origin, int clientCount, int workers,
      long serviceNanos, long rttNanos, long sloNanos, long seed) {
    this.scheme = scheme;
    this.clock = new VirtualClock(origin);
    this.halfRtt = rttNanos / 2;
    this.serviceNanos = serviceNanos;
    this.sloNanos = sloNanos;
    this.idleWorkers = workers;
    this.random = new SplittableRandom(seed);
    this.gate = new LeakCheckingServerGate(scheme.newServerGate(new ServerEnvironment(clock, clock,
        runQueue, this::explicitCredit, OverloadMetrics.NONE, workers)));
    for (int i = 0; i < clientCount; i++) {
      long id = i + 1;
      clients.add(new Client(id, scheme.newClientGate(new ClientEnvironment(id, sloNanos, OverloadMetrics.NONE))));
    }
    gate.start();
  }

  /** The server's capacity in requests per second. */
  public double capacityRps(int workers) {
    return workers * 1e9 / serviceNanos;
  }

  /** Sets the total Poisson arrival rate (0 stops arrivals). */
  public void setRate(double requestsPerSecond) {
    if (nextArrival != null) {
      nextArrival.cancel();
      nextArrival = null;
    }
    ratePerNano = requestsPerSecond / 1e9;
    scheduleArrival();
  }

  /** Runs the world for {@code nanos} of virtual time. */
  public void runFor(long nanos) {
    clock.advance(nanos);
  }

  private void scheduleArrival() {
    if (ratePerNano <= 0) {
      return;
    }
    long gap = Math.max(1, Math.round(-Math.log(1 - random.nextDouble()) / ratePerNano));
    nextArrival = clock.schedule(() -> {
      Client c = clients.get(random.nextInt(clients.size()));
      if (!c.greedy && c.closedLoop == 0) { // these clients' load is their own
        issue(c);
      }
      scheduleArrival();
    }, gap);
  }

  private void issue(Client c) {
    issued++;
    Call call = new Call(c, clock.read());
    if (!c.gate.offer(call, clock.read())) {
      end(call);
      expired++;
      return;
    }
    drain(c);
  }

  private void drain(Client c) {
    c.gate.expire(clock.read(), call -> {
      end(call);
      expired++;
    });
    RequestMetadata header = new RequestMetadata();
    Call call;
    while ((call = c.gate.poll(clock.read(), header)) != null) {
      if (header.isRegister()) {
        c.granted += 1; // the registering request carries its own credit
      }
      c.inFlight++;
      if (scheme.issuesCredits() && c.inFlight > c.granted && grantViolations.size() < 10) {
        grantViolations.add("session " + c.sessionId + " had " + c.inFlight + " in flight with "
            + c.granted + " granted at t=" + clock.elapsed());
      }
      call.sentAt = clock.read();
      Call sent = call;
      RequestMetadata copy = new RequestMetadata().sessionId(header.sessionId())
          .requestId(issued).demand(header.demand()).flags(header.flags()).priority(header.priority())
          .tokens(header.tokens()).interfaceId(header.interfaceId())
          .creditId(header.creditId()).origin(c.sessionId); // a connection per client
      clock.schedule(() -> serverReceive(sent, copy), halfRtt);
      header.reset();
    }
    int demand = c.gate.takeDemandReport();
    if (demand >= 0) {
      clock.schedule(() -> gate.onDemand(c.sessionId, demand, clock.read()), halfRtt);
    }
    if (c.gate.queued() > 0) {
      long at = c.gate.nextWakeupNanos();
      if (c.wakeupAt == Long.MIN_VALUE || at - c.wakeupAt < 0) {
        c.wakeupAt = at;
        long delay = Math.max(1, at - clock.read());
        clock.schedule(() -> {
          if (c.wakeupAt == at) {
            c.wakeupAt = Long.MIN_VALUE;
            drain(c);
          }
        }, delay);
      }
    }
  }

  private void serverReceive(Call call, RequestMetadata header) {
    Client c = call.client;
    boolean ownSession = header.sessionId() == c.sessionId; // a flood's fresh ones keep no ledger
    if (ownSession && !c.knownToServer) {
      c.knownToServer = true;
      granted(c, 1); // the registering request carries its own credit
    }
    ServerPermit permit = gate.admit(header, clock.read());
    call.permit = permit;
    if (ownSession) {
      account(c, permit);
    }
    if (!permit.isAdmitted()) {
      ResponseMetadata reject = new ResponseMetadata();
      permit.complete(Outcome.DROPPED, clock.read(), reject);
      if (ownSession) {
        granted(c, reject.creditDelta());
      }
      clock.schedule(() -> clientReceive(call, reject), halfRtt);
      return;
    }
    if (idleWorkers > 0) {
      startService(call);
    } else {
      runQueue.offer(call, clock.read());
    }
  }

  /** The server's ledger of session {@code c} on a decision: {@link #accounting}, violations. */
  private void account(Client c, ServerPermit permit) {
    mark(c);
    if (permit.isAdmitted()) {
      c.inServer++;
      if (c.inServer > c.grantedByServer) {
        c.admittedBeyond++;
      } else {
        c.admittedWithin++;
      }
      if (scheme.issuesCredits() && c.inServer > c.peakGrantedByServer && serverViolations.size() < 10) {
        serverViolations.add("session " + c.sessionId + " admitted with " + c.inServer
            + " in the server, more than the " + c.peakGrantedByServer
            + " it was ever granted, at t=" + clock.elapsed());
      }
    } else if (permit.status() == Status.REJECTED_NO_CREDIT && scheme.issuesCredits()
        && c.inServer < c.grantedByServer && serverViolations.size() < 10) {
      serverViolations.add("session " + c.sessionId + " refused for credit with " + c.inServer
          + " in the server and " + c.grantedByServer + " granted, at t=" + clock.elapsed());
    }
    if (permit.status() == Status.REJECTED_NO_CREDIT) {
      c.refusedForCredit++;
    }
  }

  private void startService(Call call) {
    idleWorkers--;
    clock.schedule(() -> {
      ResponseMetadata response = new ResponseMetadata();
      call.permit.complete(Outcome.SUCCESS, clock.read(), response);
      if (response.sessionId() == call.client.sessionId) {
        mark(call.client);
        call.client.inServer--;
        granted(call.client, response.creditDelta());
      }
      clock.schedule(() -> clientReceive(call, response), halfRtt);
      idleWorkers++;
      Call next = runQueue.poll();
      if (next != null) {
        startService(next);
      }
    }, serviceNanos);
  }

  private void granted(Client c, int delta) {
    mark(c);
    if (delta > 0) {
      c.grows++;
    } else if (delta < 0) {
      c.shrinks++;
    }
    c.grantedByServer += delta;
    c.peakGrantedByServer = Math.max(c.peakGrantedByServer, c.grantedByServer);
  }

  private void explicitCredit(long sessionId, int delta) {
    if (sessionId > clients.size()) {
      return; // a session of a flood: nobody reads its credits
    }
    Client c = clients.get((int) (sessionId - 1));
    granted(c, delta);
    clock.schedule(() -> {
      c.granted += delta;
      c.gate.onControl(new ResponseMetadata().sessionId(sessionId).creditDelta(delta), clock.read());
      drain(c);
    }, halfRtt);
  }

  private void clientReceive(Call call, ResponseMetadata response) {
    Client c = call.client;
    if (response.status() == Status.OK) {
      c.servedOk++;
      if (clock.read() - call.issuedAt <= sloNanos) {
        c.good++;
      }
    }
    if (c.greedy) {
      c.inFlight--;
      if (response.status() == Status.OK) {
        served++;
      } else {
        rejected.merge(response.status(), 1L, Long::sum);
      }
      end(call);
      if (c.greedy) {
        sendGreedy(c); // at once, credit or not
      }
      return;
    }
    c.inFlight--;
    c.granted += response.creditDelta();
    c.gate.onResponse(response, call.sentAt, clock.read());
    if (response.status() == Status.OK) {
      served++;
    } else {
      rejected.merge(response.status(), 1L, Long::sum);
    }
    end(call);
    drain(c);
  }

  private void end(Call call) {
    if (call.ended) {
      endedTwice++;
    }
    call.ended = true;
    Client c = call.client;
    if (c.closedLoop > 0) {
      clock.schedule(() -> issue(c), 1); // the next one, through its gate
    }
  }

  /**
   * Makes session {@code sessionId} a heavy, well-behaved client: it keeps {@code outstanding}
   * requests issued and not ended, each through its gate (so it reports its demand and waits for
   * credits). The world's arrivals no longer go to it. The yardstick for a greedy client: an honest
   * session with the same appetite.
   */
  public void closedLoop(long sessionId, int outstanding) {
    Client c = clients.get((int) (sessionId - 1));
    c.closedLoop = outstanding;
    for (int i = 0; i < outstanding; i++) {
      issue(c);
    }
  }

  /** Stops every greedy or closed-loop client from sending more. */
  public void quiesce() {
    for (Client c : clients) {
      c.closedLoop = 0;
      c.greedy = false;
    }
  }

  /**
   * Makes session {@code sessionId} ignore its gate from now on: it sends {@code outstanding}
   * requests at once and, whenever one is answered (served or refused), another at once, reporting
   * no demand. The world's arrivals no longer go to it.
   */
  public void greedy(long sessionId, int outstanding) {
    Client c = clients.get((int) (sessionId - 1));
    c.greedy = true;
    c.greedyOutstanding = outstanding;
    for (int i = 0; i < outstanding; i++) {
      sendGreedy(c);
    }
  }

  /**
   * Makes session {@code sessionId}'s client flood the server with sessions: as {@link #greedy},
   * but each request registers a session id never used before, so no window of its own ever
   * holds it. The world's arrivals no longer go to it; its answers count as session
   * {@code sessionId}'s.
   */
  public void floodSessions(long sessionId, int outstanding) {
    clients.get((int) (sessionId - 1)).freshSessions = true;
    greedy(sessionId, outstanding);
  }

  private long nextFreshSession = 1L << 40;

  private void sendGreedy(Client c) {
    issued++;
    Call call = new Call(c, clock.read());
    call.sentAt = clock.read();
    c.inFlight++;
    RequestMetadata header = c.freshSessions
        ? new RequestMetadata().sessionId(nextFreshSession++).requestId(issued)
            .flags(RequestMetadata.FLAG_REGISTER).origin(c.sessionId)
        : new RequestMetadata().sessionId(c.sessionId).requestId(issued).origin(c.sessionId);
    clock.schedule(() -> serverReceive(call, header), halfRtt);
  }

  /** Adds the time since the last change of its window or requests in the server to the integrals. */
  private void mark(Client c) {
    long now = clock.read();
    if (c.markedAt != Long.MIN_VALUE) {
      long span = now - c.markedAt;
      c.windowIntegral += (double) span * c.grantedByServer;
      c.inServerIntegral += (double) span * c.inServer;
    }
    c.markedAt = now;
  }

  /**
   * How session {@code sessionId} was served, as the server's ledger saw it: its admissions within
   * the window granted (credits on their way included) and beyond it (the allowance for
   * revocations on their way), its refusals for credit, how often its window grew and shrank,
   * and its mean window and mean requests in the server over the run so far.
   */
  public String accounting(long sessionId) {
    Client c = clients.get((int) (sessionId - 1));
    mark(c);
    double elapsed = Math.max(1, clock.elapsed());
    return String.format(java.util.Locale.ROOT,
        "admitted %d within the window, %d beyond it; refused for credit %d; window grew %d times,"
            + " shrank %d; mean window %.2f, mean in the server %.2f",
        c.admittedWithin, c.admittedBeyond, c.refusedForCredit, c.grows, c.shrinks,
        c.windowIntegral / elapsed, c.inServerIntegral / elapsed);
  }

  /** Responses served (status OK) to session {@code sessionId}. */
  public long servedTo(long sessionId) {
    return clients.get((int) (sessionId - 1)).servedOk;
  }

  /** Responses served within the SLO, counted from arrival, to sessions other than {@code except}. */
  public long goodExcept(long except) {
    long sum = 0;
    for (Client c : clients) {
      if (c.sessionId != except) {
        sum += c.good;
      }
    }
    return sum;
  }

  /** Sends {@code count} requests from session {@code sessionId} at once, ignoring its gate. */
  public void flood(long sessionId, int count) {
    Client c = clients.get((int) (sessionId - 1));
    for (int i = 0; i < count; i++) {
      issued++;
      Call call = new Call(c, clock.read());
      call.sentAt = clock.read();
      c.inFlight++;
      RequestMetadata header = new RequestMetadata().sessionId(sessionId).requestId(issued)
          .flags(i == 0 ? RequestMetadata.FLAG_REGISTER : 0).origin(sessionId);
      clock.schedule(() -> serverReceive(call, header), halfRtt);
    }
  }

  public LeakCheckingServerGate gate() {
    return gate;
  }

  public VirtualClock clock() {
    return clock;
  }

  public long issued() {
    return issued;
  }

  public long served() {
    return served;
  }

  public long expired() {
    return expired;
  }

  public long rejected(Status status) {
    return rejected.getOrDefault(status, 0L);
  }

  public long rejectedTotal() {
    return rejected.values().stream().mapToLong(Long::longValue).sum();
  }

  /** Requests issued that have not ended (still queued or in flight). */
  public long unfinished() {
    return issued - served - expired - rejectedTotal();
  }

  public long endedTwice() {
    return endedTwice;
  }

  public List<String> grantViolations() {
    return grantViolations;
  }

  /**
   * Where a credit scheme's server broke its own ledger, as the server granted it (counting
   * credits still on their way to the client): a session admitted with more requests in the
   * server than it was ever granted, or refused for credit with fewer in the server than it
   * holds now.
   */
  public List<String> serverViolations() {
    return serverViolations;
  }

  /** Requests of session {@code sessionId} admitted and not yet answered. */
  public int inServer(long sessionId) {
    return clients.get((int) (sessionId - 1)).inServer;
  }

  /** Credits the server has granted session {@code sessionId} (window), in flight included. */
  public long grantedByServer(long sessionId) {
    return clients.get((int) (sessionId - 1)).grantedByServer;
  }

  /** A compact fingerprint of the run, to compare two runs for equality. */
  public String fingerprint() {
    return "issued=" + issued + " served=" + served + " expired=" + expired + " rejected=" + rejected
        + " admitted=" + gate.admitted();
  }
}
