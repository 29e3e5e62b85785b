package io.spillway.spring.internal;

import io.spillway.api.BudgetExceededException;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import reactor.core.publisher.Mono;

/**
 * Keeps a budget abort a fast reject under WebFlux when the application maps exceptions itself.
 * WebFlux answers a handler's exception with the application's {@code @ExceptionHandler} methods
 * inside the handler adapter, so a global {@code @ExceptionHandler(Exception.class)} would turn a
 * {@link BudgetExceededException} from a {@code BudgetedLock} into its own {@code 500}, which
 * {@link SpillwayWebFilter} would pass on as an answer: the client would take a shed request for a
 * server error and retry it at once. Ordered first, this advice claims the abort (its cause chain
 * included, as Spring matches handlers) and passes it on as an error, which the filter answers
 * as a reject with its pushback, ending the permit as aborted (docs/design.md, "Request budget
 * (ASQM)"). Spring MVC has {@link BudgetAbortExceptionResolver} instead.
 *
 * <p>Thread-safe; stateless.
 */
@ControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
public final class BudgetAbortAdvice {

  /** Passes the abort on, past the application's exception handlers, to the filter. */
  @ExceptionHandler(BudgetExceededException.class)
  public Mono<Void> abort(BudgetExceededException abort) {
    return Mono.error(abort);
  }
}
