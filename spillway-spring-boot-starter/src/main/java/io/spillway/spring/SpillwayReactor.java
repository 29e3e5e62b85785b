package io.spillway.spring;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Ticker;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * Spillway for Reactor pipelines: a gate around a {@code Mono} or {@code Flux}, and the request
 * budget in the Reactor {@link Context}.
 *
 * <pre>{@code
 * Mono<Reply> reply = service.call(query)
 *     .transformDeferred(SpillwayReactor.gate(gate, ticker));   // the same for a Flux
 * }</pre>
 *
 * <p>Each subscription is decided on as it subscribes (one {@link ServerGate#admit}); a rejected
 * one fails at once with a {@link SpillwayRejectedException} and the source is never subscribed.
 * An admitted one ends its permit exactly once, whichever comes first of completion
 * ({@link Outcome#SUCCESS}), an error ({@link Outcome#ABORTED} for a {@link
 * BudgetExceededException}, else {@link Outcome#FAILED}) and cancellation ({@link
 * Outcome#FAILED}: nobody waits for the answer). Nothing here blocks: the gate's {@code admit}
 * and a permit's completion are non-blocking by the {@link ServerGate} contract, which the tests
 * check with BlockHound.
 *
 * <p>The request's budget travels in the Reactor context under {@link #BUDGET_KEY} (a
 * {@link ScopedValue} does not follow a pipeline across threads); the WebFilter puts it there,
 * and a gated publisher passes the remaining budget to its gate.
 *
 * <p>Thread-safe; the functions it returns may be shared.
 */
public final class SpillwayReactor {

  /** The context key of the request's {@link RequestBudget}. */
  public static final Class<RequestBudget> BUDGET_KEY = RequestBudget.class;

  private SpillwayReactor() { }

  /** A context holding {@code budget}, for {@code contextWrite}. */
  public static Function<Context, Context> withBudget(RequestBudget budget) {
    Objects.requireNonNull(budget, "budget");
    return context -> context.put(BUDGET_KEY, budget);
  }

  /** The budget in {@code context}, or {@code null}. */
  public static RequestBudget budget(ContextView context) {
    return context.getOrDefault(BUDGET_KEY, null);
  }

  /**
   * {@code Mono.fromCallable(callable)} with the budget in the subscriber's context bound to
   * {@link RequestBudget#CURRENT} while {@code callable} runs, on whichever thread that is: the
   * way to blocking service code that takes a {@code BudgetedLock} ({@code acquireWithinBudget()}
   * reads {@code CURRENT}, which a Reactor pipeline does not carry). Without a budget in the
   * context it runs unbound, as {@code Mono.fromCallable} does.
   *
   * <pre>{@code
   * Mono<Stock> stock = SpillwayReactor.fromCallable(() -> service.reserve(sku))
   *     .subscribeOn(Schedulers.boundedElastic());   // blocking code off the event loop
   * }</pre>
   */
  public static <T> Mono<T> fromCallable(Callable<? extends T> callable) {
    Objects.requireNonNull(callable, "callable");
    return Mono.deferContextual(context -> {
      RequestBudget budget = budget(context);
      if (budget == null) {
        return Mono.fromCallable(callable);
      }
      return Mono.fromCallable(() -> ScopedValue.where(RequestBudget.CURRENT, budget)
          .call(callable::call));
    });
  }

  /**
   * A gate for {@code Mono.transformDeferred} and {@code Flux.transformDeferred}: a {@code Mono}
   * stays a {@code Mono} (so that its completion after its value is not mistaken for a
   * cancellation).
   *
   * @param gate a started gate
   * @param ticker the clock the gate is handed readings of
   */
  public static <T> Function<Publisher<T>, Publisher<T>> gate(ServerGate gate, Ticker ticker) {
    Objects.requireNonNull(gate, "gate");
    Objects.requireNonNull(ticker, "ticker");
    return source -> {
      if (source instanceof Mono<T> mono) {
        return Mono.deferContextual(context -> {
          ServerPermit permit = admit(gate, ticker, context);
          if (!permit.isAdmitted()) {
            return Mono.error(new SpillwayRejectedException(permit.status(), 0));
          }
          Release release = new Release(permit, ticker);
          return mono.doOnError(release.onError).doFinally(release);
        });
      }
      return Flux.deferContextual(context -> {
        ServerPermit permit = admit(gate, ticker, context);
        if (!permit.isAdmitted()) {
          return Flux.error(new SpillwayRejectedException(permit.status(), 0));
        }
        Release release = new Release(permit, ticker);
        return Flux.from(source).doOnError(release.onError).doFinally(release);
      });
    };
  }

  private static ServerPermit admit(ServerGate gate, Ticker ticker, ContextView context) {
    RequestMetadata request = new RequestMetadata();
    RequestBudget budget = budget(context);
    if (budget != null) {
      request.budgetNanos(budget.remainingNanos());
    }
    long now = ticker.read();
    ServerPermit permit = gate.admit(request, now);
    if (!permit.isAdmitted()) {
      permit.complete(Outcome.DROPPED, now, new ResponseMetadata());
    } else {
      permit.started(now); // subscribed to at once: the source waits in no queue of the gate's
    }
    return permit;
  }

  /** Ends one admitted subscription's permit, once. */
  private static final class Release implements Consumer<SignalType> {
    private final ServerPermit permit;
    private final Ticker ticker;
    private final AtomicBoolean done = new AtomicBoolean();
    private volatile Throwable error;
    final Consumer<Throwable> onError = e -> error = e;

    Release(ServerPermit permit, Ticker ticker) {
      this.permit = permit;
      this.ticker = ticker;
    }

    @Override
    public void accept(SignalType signal) {
      if (!done.compareAndSet(false, true)) {
        return;
      }
      Outcome outcome = switch (signal) {
        case ON_COMPLETE -> Outcome.SUCCESS;
        case ON_ERROR -> SpillwayHttpGate.budgetExceeded(error) != null
            ? Outcome.ABORTED : Outcome.FAILED;
        default -> Outcome.FAILED; // cancelled
      };
      permit.complete(outcome, ticker.read(), new ResponseMetadata());
    }
  }
}
