package io.spillway.spring.reactive;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.spring.SpillwayReactor;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A WebFlux application with the starter and its defaults, plus one queueing stage of its own (a
 * {@link QueueDelaySignal} bean the test sets), which the starter adds to the delay it steers by.
 * It runs on Reactor Netty: the starter's tests have Jetty on the class path too, and Boot would
 * pick Jetty first.
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.jetty.autoconfigure.reactive.JettyReactiveWebServerAutoConfiguration")
public class WebFluxTestApp {

  public static final AtomicLong STAGE_DELAY = new AtomicLong();
  /** The clock of {@link #STOCK}, moved by the tests. */
  public static final io.spillway.spring.app.ManualTicker LOCK_TICKER =
      new io.spillway.spring.app.ManualTicker();
  /** The service layer's lock, taken by {@code /stock} on a worker thread. */
  public static final io.spillway.asqm.BudgetedLock STOCK =
      new io.spillway.asqm.BudgetedLock("stock", LOCK_TICKER);
  /** What {@code /downstream} waits for: a reply from a service it calls, say. */
  public static volatile java.util.concurrent.CompletableFuture<String> downstream =
      java.util.concurrent.CompletableFuture.completedFuture("ready");
  /** Run as each {@code /downstream} exchange reaches its handler. */
  public static volatile Runnable downstreamEntered = () -> { };

  /** What the answer to {@code /fail-answered-later} waits for before it is written. */
  public static volatile java.util.concurrent.CompletableFuture<Void> errorAnswer =
      java.util.concurrent.CompletableFuture.completedFuture(null);

  @Bean
  QueueDelaySignal downstreamPool() {
    return now -> STAGE_DELAY.get();
  }

  /**
   * Answers an {@link AnsweredLater} failure with a {@code 500} once {@link #errorAnswer}
   * completes, as an error handler that first reports the failure elsewhere would: ahead of
   * Boot's handler, which answers at once.
   */
  @Bean
  @org.springframework.core.annotation.Order(-2)
  org.springframework.web.server.WebExceptionHandler answeredLater() {
    return (exchange, e) -> e instanceof AnsweredLater
        ? Mono.fromFuture(errorAnswer).then(Mono.defer(() -> {
          exchange.getResponse().setStatusCode(
              org.springframework.http.HttpStatus.INTERNAL_SERVER_ERROR);
          return exchange.getResponse().setComplete();
        }))
        : Mono.error(e);
  }

  /** A failure whose answer an error handler writes after an asynchronous step. */
  static final class AnsweredLater extends RuntimeException {
    AnsweredLater() {
      super("answered later");
    }
  }

  @RestController
  static class Hello {
    /** Waits, without a thread, for {@link #downstream}. */
    @GetMapping("/downstream")
    Mono<String> downstream() {
      downstreamEntered.run();
      return Mono.fromFuture(downstream);
    }

    /**
     * Fails, with {@code written} after its first part of the body has gone (the response
     * committed), else before writing anything.
     */
    @GetMapping(value = "/write-then-fail", produces = "text/plain")
    reactor.core.publisher.Flux<String> writeThenFail(
        @org.springframework.web.bind.annotation.RequestParam(name = "written",
            defaultValue = "false") boolean written) {
      IllegalStateException failure = new IllegalStateException("failed");
      return written
          ? reactor.core.publisher.Flux.just("partial").concatWith(Mono.error(failure))
          : reactor.core.publisher.Flux.error(failure);
    }

    /** Fails before writing anything; its error answer waits for {@link #errorAnswer}. */
    @GetMapping("/fail-answered-later")
    Mono<String> failAnsweredLater() {
      return Mono.error(new AnsweredLater());
    }

    /**
     * The budget a blocking service call on a worker thread finds in scope ({@link
     * RequestBudget#currentOrNull()}), -1 if none.
     */
    @GetMapping("/budget-in-scope")
    Mono<String> budgetInScope() {
      return SpillwayReactor.fromCallable(() -> {
        RequestBudget b = RequestBudget.currentOrNull();
        return Long.toString(b == null ? -1 : b.remainingNanos());
      }).subscribeOn(reactor.core.scheduler.Schedulers.boundedElastic());
    }

    /** A service call that takes {@link #STOCK} within the request's budget, on a worker. */
    @GetMapping("/stock")
    Mono<String> stock() {
      return SpillwayReactor.fromCallable(() -> {
        try (var held = STOCK.acquireWithinBudget()) {
          return "reserved";
        }
      }).subscribeOn(reactor.core.scheduler.Schedulers.boundedElastic());
    }

    /** The budget the Reactor context carries, -1 if none. */
    @GetMapping("/budget")
    Mono<String> budget() {
      return Mono.deferContextual(context -> {
        RequestBudget b = SpillwayReactor.budget(context);
        return Mono.just(Long.toString(b == null ? -1 : b.remainingNanos()));
      });
    }
  }
}
