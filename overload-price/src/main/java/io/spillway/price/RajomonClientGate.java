package io.spillway.price;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.InterfaceCall;
import io.spillway.api.InterfacePrices;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.random.RandomGenerator;

/**
 * Rajomon's client-side controller for one session (rajomon-nsdi25 §3.3; the authors' {@code
 * UnaryInterceptorEnduser} in {@code rajomon.go}): a {@link TokenWallet}, a price table with one
 * entry per interface, and a queue of requests waiting to be paid for.
 *
 * <ul>
 *   <li><b>Paying.</b> A request to interface {@code i} may leave when the wallet holds at least
 *       the price last heard for {@code i}. It then carries that price plus a uniform random share
 *       of what is left, so its tokens are uniform in {@code [price, balance]} and are removed from
 *       the wallet ("it removes tokens from its pool and attaches them to the outgoing request").
 *       The spread is what lets servers shed the requests with fewest tokens first (§3.3
 *       "Randomized Token Spending").
 *   <li><b>Fail fast or wait.</b> With a wait timeout of 0 (the authors' default {@code
 *       clientTimeOut}), a request the wallet cannot pay for at once is refused by {@link #offer},
 *       and one it can is paid for at once (its price is set aside, so several offers before a
 *       poll cannot overspend). Otherwise requests wait, in issue order, until the wallet can pay
 *       for the oldest; {@link #nextWakeupNanos()} names the next refill event. A request expires
 *       after the wait timeout or the SLO, whichever is sooner; a paid request that expires
 *       unsent is refunded.
 *   <li><b>Prices.</b> Every response or reject that carries a price updates the entry of the
 *       interface the driver names in {@link ResponseMetadata#interfaceId()}. Queued requests say
 *       their interface by implementing {@link InterfaceCall}; others call interface 0. Interface
 *       ids are 0–65,535 (they index the table); others are refused with {@link
 *       IllegalArgumentException}. The prices of the server's other interfaces a response carries
 *       ({@link ResponseMetadata#interfacePrices()}) update the entries of the interfaces this
 *       session has called: a listed price at or above the known one at once, one below it only
 *       once nothing has confirmed the known one (its own response, or a listed rise) for {@link
 *       RajomonConfig#listLowersAfterIntervals()} price intervals; then it follows the list down
 *       until something confirms it again.
 *       The response's own price is applied last, as the fresher figure for its interface.
 *       Without the list, a price heard during a spike stays until the wallet covers it, since a
 *       refused request hears nothing. On real sockets, after a 100 ms stall of every service,
 *       sessions without the list refused 15–31 % of reserve in every 250 ms window until the
 *       run ended 3.5 s later; with it, below 6 % from 1.25–1.75 s after the stall
 *       (docs/results/rajomon.md, "Stale prices after a stall"). Why a listed price lowers only
 *       a stale one: when every listed price was taken, a search response could lower the
 *       reserve price a session had just heard from reserve, so more requests arrived below the
 *       front-end's price; in the simulator's surge of both interfaces the front-end rejected
 *       12.9–16.7 % of what was offered, against 7.8–9.8 % when only prices unconfirmed for 100
 *       intervals are lowered (docs/results/rajomon.md, "A listed price lowers only a stale
 *       one").
 * </ul>
 *
 * <p>Where we differ, and why:
 *
 * <ul>
 *   <li>The authors' {@code "uniform"} strategy draws the tokens from {@code [0, balance − 1]} and
 *       rate-limits the request if the draw is below the price; we never draw below the known
 *       price, so a client that can pay always sends. Their loop also skips {@code DeductTokens}
 *       when the price check passes, so tokens are never spent in the common case; we spend them,
 *       as §3.3 describes.
 *   <li>Liveness with a capped wallet: a price heard above the wallet's cap could never be paid,
 *       and the client would never send again to hear that it fell. Such a price is assumed to fall
 *       as fast as a server can lower it ({@link PricePolicy#lowestAfter}: an empty queue at every
 *       update since it was heard, the fall doubling at each); once that lower bound is within the
 *       cap, a full wallet spends everything on one probe, which is admitted if the price did fall
 *       and otherwise rejected with the current price, restarting the wait. Paying the cap at once
 *       whenever the wallet is full sends one doomed request per {@code maxTokens} refilled tokens
 *       per client: in the simulator's surge to 2× (1,000 clients, a cap of 1,000, prices up to
 *       1,396) the server then rejected 52 % of what reached it in the first 20 ms, each reject
 *       costing it CPU; 42 % with this rule. (With the default cap of 10,000 refills, prices
 *       rarely reach it.)
 * </ul>
 *
 * <p>Not thread-safe: confined to the session's thread, per {@link ClientGate}.
 *
 * @param <R> the driver's request type
 */
public final class RajomonClientGate<R> implements ClientGate<R> {

  private static final long UNPAID = -1;

  private static final class Waiting<R> {
    final R request;
    final int interfaceId;
    final long enqueuedNanos;
    long paid = UNPAID;

    Waiting(R request, int interfaceId, long enqueuedNanos) {
      this.request = request;
      this.interfaceId = interfaceId;
      this.enqueuedNanos = enqueuedNanos;
    }
  }

  private final long sessionId;
  private final boolean failFast;
  private final long queueTimeoutNanos;
  private final TokenWallet wallet;
  private final PricePolicy policy;
  private final long priceIntervalNanos;
  /** How old a known price must be before a listed one may lower it. */
  private final long listLowersAfterNanos;
  private final ClientPriceTable prices = new ClientPriceTable();
  private final ArrayDeque<Waiting<R>> queue = new ArrayDeque<>();
  private boolean waitingForTokens;

  /**
   * A client gate for the session in {@code environment}.
   *
   * @param random the source of the wallet's refills and of token spending; seed it for
   *     reproducible runs ({@link Rajomon} seeds it from the config's seed and the session id)
   */
  RajomonClientGate(RajomonConfig config, ClientEnvironment environment,
      RandomGenerator random) {
    Objects.requireNonNull(config, "config");
    this.sessionId = environment.sessionId();
    this.failFast = config.failFast();
    this.queueTimeoutNanos = failFast
        ? environment.sloNanos()
        : Math.min(config.clientWaitTimeoutNanos(), environment.sloNanos());
    this.wallet = TokenWallet.of(config, random);
    this.policy = PricePolicy.of(config);
    this.priceIntervalNanos = config.priceUpdateIntervalNanos();
    this.listLowersAfterNanos = config.listLowersAfterIntervals() > Long.MAX_VALUE / priceIntervalNanos
        ? Long.MAX_VALUE : config.listLowersAfterIntervals() * priceIntervalNanos;
  }

  @Override
  public boolean offer(R request, long arrivalNanos, long nowNanos) {
    Waiting<R> waiting = new Waiting<>(Objects.requireNonNull(request, "request"),
        Interfaces.of(request), ClientGate.queuedSince(arrivalNanos, nowNanos));
    prices.track(waiting.interfaceId);
    if (failFast) {
      long due = due(waiting.interfaceId, nowNanos);
      if (!wallet.tryWithdraw(due, nowNanos)) {
        return false; // rate-limited at the client: the server never sees it
      }
      waiting.paid = due;
    }
    queue.addLast(waiting);
    return true;
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    Waiting<R> head = queue.peekFirst();
    if (head == null) {
      return null;
    }
    if (head.paid == UNPAID) {
      long due = due(head.interfaceId, nowNanos);
      if (!wallet.tryWithdraw(due, nowNanos)) {
        waitingForTokens = true;
        return null;
      }
      head.paid = due;
    }
    waitingForTokens = false;
    queue.pollFirst();
    long tokens = head.paid + wallet.withdrawUniform(nowNanos);
    header.sessionId(sessionId).demand(queue.size()).tokens(tokens).interfaceId(head.interfaceId);
    return head.request;
  }

  /**
   * The least a request to {@code interfaceId} must carry: its known price; for a price above the
   * cap, the whole (full) wallet once the price may have fallen within the cap, else more than any
   * wallet holds.
   */
  private long due(int interfaceId, long nowNanos) {
    long price = prices.price(interfaceId);
    long cap = wallet.maxTokens();
    if (price <= cap) {
      return price;
    }
    long intervals = Math.max(0, nowNanos - prices.heardAtNanos(interfaceId)) / priceIntervalNanos;
    return policy.lowestAfter(price, intervals) <= cap ? cap : Long.MAX_VALUE;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    hear(response, nowNanos);
  }

  @Override
  public void onControl(ResponseMetadata control, long nowNanos) {
    hear(control, nowNanos);
  }

  private void hear(ResponseMetadata response, long nowNanos) {
    InterfacePrices others = response.interfacePrices();
    for (int k = 0; k < others.size(); k++) {
      int id = others.interfaceId(k);
      long listed = others.price(k);
      // A higher price is news at once; a lower one only replaces a price that nothing has
      // confirmed for a while (what a stall leaves behind), not one its own responses keep fresh.
      // Lowering confirms nothing, so a stale price follows the list down until confirmed again.
      if (!prices.raiseIfTracked(id, listed, nowNanos)
          && nowNanos - prices.confirmedAtNanos(id) >= listLowersAfterNanos) {
        prices.lowerIfTracked(id, listed, nowNanos);
      }
    }
    if (response.hasPrice()) {
      prices.update(response.interfaceId(), response.price(), nowNanos);
    }
  }

  @Override
  public int expire(long nowNanos, Consumer<? super R> expired) {
    int removed = 0;
    Waiting<R> head;
    while ((head = queue.peekFirst()) != null && nowNanos - head.enqueuedNanos >= queueTimeoutNanos) {
      queue.pollFirst();
      if (head.paid > 0) {
        wallet.deposit(head.paid, nowNanos);
      }
      removed++;
      expired.accept(head.request);
    }
    if (queue.isEmpty()) {
      waitingForTokens = false;
    }
    return removed;
  }

  @Override
  public boolean remove(R request, long nowNanos) {
    for (java.util.Iterator<Waiting<R>> it = queue.iterator(); it.hasNext(); ) {
      Waiting<R> w = it.next();
      if (w.request == request) {
        it.remove();
        if (w.paid > 0) {
          wallet.deposit(w.paid, nowNanos); // paid for and never sent, as an expired one
        }
        if (queue.isEmpty()) {
          waitingForTokens = false;
        }
        return true;
      }
    }
    return false;
  }

  @Override
  public long nextWakeupNanos() {
    Waiting<R> head = queue.peekFirst();
    if (head == null) {
      return Long.MIN_VALUE;
    }
    long expiry = head.enqueuedNanos + queueTimeoutNanos;
    if (waitingForTokens) {
      long refill = wallet.nextRefillNanos();
      return refill - expiry < 0 ? refill : expiry;
    }
    return expiry;
  }

  @Override
  public int queued() {
    return queue.size();
  }

  /** The price this client last heard for {@code interfaceId} (0 if none). */
  public long knownPrice(int interfaceId) {
    return prices.price(interfaceId);
  }

  /** The wallet's balance at {@code nowNanos}, after the refills due by then. */
  public long balance(long nowNanos) {
    return wallet.balance(nowNanos);
  }
}
