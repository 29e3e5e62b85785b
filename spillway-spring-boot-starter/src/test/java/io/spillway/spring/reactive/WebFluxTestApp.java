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
  /** What {@code /downstream} waits for: a reply from a service it calls, say. */
  public static volatile java.util.concurrent.CompletableFuture<String> downstream =
      java.util.concurrent.CompletableFuture.completedFuture("ready");
  /** Run as each {@code /downstream} exchange reaches its handler. */
  public static volatile Runnable downstreamEntered = () -> { };

  @Bean
  QueueDelaySignal downstreamPool() {
    return now -> STAGE_DELAY.get();
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
