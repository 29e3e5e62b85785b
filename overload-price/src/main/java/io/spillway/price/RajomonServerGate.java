package io.spillway.price;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.CallGraphGate;
import io.spillway.api.Cancellable;
import io.spillway.api.InterfacePrices;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.random.RandomGenerator;

/**
 * Rajomon's server-side controller (rajomon-nsdi25 §3.2, §3.4; the authors' {@code
 * UnaryInterceptor} and {@code queuingCheck} in {@code rajomon.go} and {@code
 * overloadDetection.go}).
 *
 * <ul>
 *   <li><b>Admission.</b> A request is admitted when its tokens cover the total price of the
 *       interface it calls ({@link RequestMetadata#tokens()} ≥ local price + the highest price its
 *       callees last published), and otherwise rejected at once with {@link
 *       Status#REJECTED_PRICE}. Requests with more tokens survive higher prices: that is how
 *       servers along a call graph agree on which requests to shed.
 *   <li><b>Price updates.</b> Every update interval, on the injected {@link Scheduler}, the gate
 *       reads the server's queueing delay ({@link ServerEnvironment#queueDelay()}) and moves the
 *       local price by {@link PricePolicy}: in proportion to the delay's distance from the
 *       threshold and, weighted, to its change since the last update (the trend term), up (never
 *       above the most tokens a request brought in the last {@value #CEILING_INTERVALS}
 *       intervals) or down, the fall doubling at each short queue once the price stood above that
 *       ceiling (unwinding). The authors read the maximum Go scheduler latency over the interval
 *       ({@code queuingDelay.go}); Spillway's signal is the age of the oldest waiting item summed
 *       over stages, read at the tick.
 *   <li><b>Call graph.</b> As a {@link CallGraphGate}, it hears every downstream response made
 *       while serving one of its interfaces and keeps, per interface, the last price each callee
 *       published ({@link InterfacePriceTable}); a price not refreshed for a whole interval falls
 *       as fast as the callee's own could.
 *   <li><b>Lazy prices.</b> Completing a permit writes the interface's current total price into
 *       the response when the {@link PriceAttachment} says so, and always on a reject; with {@link
 *       RajomonConfig#allInterfacePrices()} also the total price of every interface requests have
 *       called, as of the last update ({@link InterfacePrices}: §3.4, "updating the upstream
 *       services with the current local prices"), once there are two or more, and at most the
 *       {@value #MAX_LISTED_INTERFACES} called first. The list is built once per update, on the
 *       update thread, and shared by every response until the next.
 *   <li><b>Token audit</b> (optional, beyond the paper): caps each session's tokens at what it could
 *       have earned ({@link TokenAudit}).
 * </ul>
 *
 * <p>Thread-safe: {@link #admit} and permit completion take no lock (unless the audit or a
 * probabilistic attachment is on, which lock one session account or the generator briefly); price
 * updates run on the scheduler's thread; {@link #onDownstreamResponse} may be called from any
 * thread.
 */
public final class RajomonServerGate implements ServerGate, CallGraphGate {

  private final RajomonConfig config;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final QueueDelaySignal queueDelay;
  private final OverloadMetrics metrics;
  private final PricePolicy policy;
  private final InterfacePriceTable prices = new InterfacePriceTable();
  private final TokenAudit audit;
  private final PriceAttachment attachment;
  private final RandomGenerator random;
  private final boolean allPrices;
  private final AtomicLong responses = new AtomicLong();
  /**
   * The interfaces requests have called, in order of first sight; copied on write under {@link
   * #calledLock}, once per interface. {@link #called} flags them by id for the admit path.
   */
  private volatile int[] calledIds = new int[0];
  private volatile boolean[] called = new boolean[0];
  /** Whether {@link #calledIds} holds {@link #MAX_LISTED_INTERFACES}: admit stops looking then. */
  private volatile boolean listFull;
  private final Object calledLock = new Object();
  /**
   * Every called interface's total price at the last update, for {@link #allPrices}; {@link
   * InterfacePrices#NONE} while only one has been called, when the list would say no more than a
   * response's own price.
   */
  private volatile InterfacePrices interfacePrices = InterfacePrices.NONE;
  private final Object lifecycle = new Object();
  private Cancellable updates;
  private boolean closed;
  private volatile long lastDelayNanos;
  /**
   * The most tokens a request brought in this update interval beyond its callees' price. Read and
   * reset atomically at each update. The hot path reads it plainly and writes only a new maximum,
   * a CAS a few times per interval.
   */
  private final AtomicLong richestHeadroom = new AtomicLong();
  /**
   * {@link #richestHeadroom} of the last {@value #CEILING_INTERVALS} intervals; their maximum is the
   * local price's ceiling ({@link PricePolicy}). Touched only by the update loop.
   */
  private final long[] recentRichest = new long[CEILING_INTERVALS];
  private int recentSlot;
  /** Consecutive short-queue updates while unwinding ({@link PricePolicy#shortUpdates}). */
  private int shortUpdates;
  /** Whether the price saturated and has not yet come down to a growing queue; update loop only. */
  private boolean unwinding;

  /**
   * Intervals the ceiling looks back over. One interval was too few: at the hotspot of the hotel
   * graph with every service on one core (1 ms intervals, about one request each) the ceiling was
   * then a single request's tokens or none, the price could not climb to what sheds enough, and at
   * 2× the p95 reached 199 ms against an SLO of 65 ms ({@code ./spillway graph hotel-surge}). With eight, a stall still cannot raise the price above the
   * richest request of the last eight intervals, and even there the ceiling sees several requests.
   */
  static final int CEILING_INTERVALS = 8;

  /**
   * The most interfaces {@link #interfacePrices()} lists, the first called. Interface ids come
   * with the requests, and a native-frame peer may name any of the 65,536 a table holds; every
   * listed interface is priced and copied at each update and rides on every priced response (in
   * gRPC metadata by its full method name, where 64 names stay well within the 8 KiB of metadata
   * a gRPC client accepts by default). An interface past the bound still hears its own price on
   * its own responses, as without the list (§3.4).
   */
  static final int MAX_LISTED_INTERFACES = 64;

  /**
   * A gate for one server.
   *
   * @param random used only for {@link PriceAttachment#withProbability}; seed it for reproducible
   *     runs
   */
  RajomonServerGate(RajomonConfig config, ServerEnvironment environment,
      RandomGenerator random) {
    this.config = Objects.requireNonNull(config, "config");
    this.ticker = environment.ticker();
    this.scheduler = environment.scheduler();
    this.queueDelay = environment.queueDelay();
    this.metrics = environment.metrics();
    this.policy = PricePolicy.of(config);
    this.audit = config.tokenAudit() ? TokenAudit.of(config) : null;
    this.attachment = config.priceAttachment();
    this.allPrices = config.allInterfacePrices();
    this.random = Objects.requireNonNull(random, "random");
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    int interfaceId = request.interfaceId();
    boolean[] seen = called;
    if (allPrices && !listFull
        && (interfaceId < 0 || interfaceId >= seen.length || !seen[interfaceId])) {
      firstCall(interfaceId); // once per interface
    }
    long downstream = prices.downstreamPrice(interfaceId);
    long price = prices.localPrice() + downstream;
    long tokens = Math.max(0, request.tokens());
    if (audit != null) {
      tokens = audit.admissibleTokens(request.sessionId(), tokens, nowNanos);
    }
    long headroom = tokens - downstream;
    if (headroom > richestHeadroom.getPlain()) { // rare once the interval's maximum is seen
      richestHeadroom.accumulateAndGet(headroom, Math::max);
    }
    Status decision = tokens >= price ? Status.OK : Status.REJECTED_PRICE;
    metrics.onAdmission(decision);
    return new PricedPermit(decision, interfaceId);
  }

  @Override
  public void onDownstreamResponse(int inboundInterfaceId, int calleeKey,
      ResponseMetadata response, long nowNanos) {
    // The inbound id is the request's, read off the wire; admit priced an id outside the table at
    // the local price alone, and so it stays: no callee price is kept for it.
    if (response.hasPrice() && inboundInterfaceId >= 0 && inboundInterfaceId <= Interfaces.MAX_ID) {
      prices.publish(inboundInterfaceId, calleeKey, response.price());
    }
  }

  @Override
  public void deregister(long sessionId, long nowNanos) {
    if (audit != null) {
      audit.forget(sessionId);
    }
  }

  /** Starts the periodic price updates, every {@link RajomonConfig#priceUpdateIntervalNanos()}. */
  @Override
  public void start() {
    synchronized (lifecycle) {
      if (updates == null && !closed) {
        updates = scheduler.every(config.priceUpdateIntervalNanos(), this::updatePrices);
      }
    }
  }

  @Override
  public void close() {
    synchronized (lifecycle) {
      closed = true;
      if (updates != null) {
        updates.cancel();
      }
    }
  }

  /** One update interval: the local price follows the queueing delay, stale callee prices age. */
  private void updatePrices() {
    long delay = queueDelay.queueingDelayNanos(ticker.read());
    long previous = lastDelayNanos;
    lastDelayNanos = delay;
    recentRichest[recentSlot] = richestHeadroom.getAndSet(0);
    recentSlot = (recentSlot + 1) % CEILING_INTERVALS;
    long ceiling = 0;
    for (long richest : recentRichest) {
      ceiling = Math.max(ceiling, richest);
    }
    int shortBefore = shortUpdates;
    shortUpdates = unwinding ? policy.shortUpdates(shortBefore, delay) : 0;
    if (shortBefore > 0 && shortUpdates == 0) {
      unwinding = false; // the queue grew again: the wound-up part is gone
    }
    long price = policy.next(prices.localPrice(), delay, previous, ceiling, shortUpdates);
    if (price > ceiling && price > 0) {
      unwinding = true; // saturated: this price refuses every request of the last intervals
    }
    prices.localPrice(price);
    prices.decayStale(policy::lowestAfter);
    if (allPrices) {
      interfacePrices = snapshotPrices();
    }
    // Last: a metrics callback that throws ends this run (Scheduler#every logs it and goes on),
    // and must not leave the callees' prices unaged or the list of prices unbuilt.
    metrics.onPrice(price);
  }

  private void firstCall(int interfaceId) {
    if (interfaceId < 0 || interfaceId > Interfaces.MAX_ID) {
      return;
    }
    synchronized (calledLock) {
      boolean[] seen = called;
      if (interfaceId < seen.length && seen[interfaceId]) {
        return;
      }
      if (calledIds.length >= MAX_LISTED_INTERFACES) {
        listFull = true;
        return;
      }
      int[] ids = Arrays.copyOf(calledIds, calledIds.length + 1);
      ids[ids.length - 1] = interfaceId;
      calledIds = ids;
      boolean[] grown = Arrays.copyOf(seen, Math.max(seen.length, interfaceId + 1));
      grown[interfaceId] = true;
      called = grown;
    }
  }

  /** The total price of every called interface, or none while only one has been called. */
  private InterfacePrices snapshotPrices() {
    int[] ids = calledIds;
    if (ids.length < 2) {
      return InterfacePrices.NONE;
    }
    long[] totals = new long[ids.length];
    for (int k = 0; k < ids.length; k++) {
      totals[k] = prices.total(ids[k]);
    }
    return InterfacePrices.of(ids, totals);
  }

  /** What responses carry beside their own price: every interface's, as of the last update. */
  public InterfacePrices interfacePrices() {
    return interfacePrices;
  }

  /** The server's own price, driven by its queueing delay. */
  public long localPrice() {
    return prices.localPrice();
  }

  /** The highest price the callees of {@code interfaceId} last published (0 if none). */
  public long downstreamPrice(int interfaceId) {
    return prices.downstreamPrice(interfaceId);
  }

  /** What a request to {@code interfaceId} must carry now: local plus downstream price. */
  public long totalPrice(int interfaceId) {
    return prices.total(interfaceId);
  }

  /** The queueing delay read at the last price update. */
  public long lastQueueingDelayNanos() {
    return lastDelayNanos;
  }

  /** The configuration this gate runs with. */
  public RajomonConfig config() {
    return config;
  }

  private boolean attachToThisResponse() {
    return switch (attachment) {
      case PriceAttachment.EveryNth every ->
          every.n() == 1 || responses.getAndIncrement() % every.n() == 0;
      case PriceAttachment.WithProbability chance -> {
        synchronized (random) {
          yield random.nextDouble() < chance.p();
        }
      }
      case PriceAttachment.OnRejectsOnly ignored -> false;
    };
  }

  private final class PricedPermit extends AbstractServerPermit {
    private final int interfaceId;

    PricedPermit(Status status, int interfaceId) {
      super(status);
      this.interfaceId = interfaceId;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      if (!isAdmitted() || attachToThisResponse()) {
        response.price(prices.total(interfaceId));
        if (allPrices) {
          response.interfacePrices(interfacePrices);
        }
      }
      metrics.onCompletion(outcome); // last: a callback that throws finds the response whole
    }
  }
}
