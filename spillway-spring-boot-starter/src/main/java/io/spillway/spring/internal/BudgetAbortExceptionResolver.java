package io.spillway.spring.internal;

import io.spillway.api.BudgetExceededException;
import io.spillway.spring.SpillwayHttpGate;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.core.Ordered;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;

/**
 * Keeps a budget abort a fast reject when the application maps exceptions itself. Spring MVC
 * resolves a handler's exception inside the dispatcher, so an application's
 * {@code @ExceptionHandler(Exception.class)} (a "global exception handler", common in Spring
 * services) would turn a {@link BudgetExceededException} from a {@code BudgetedLock} into its own
 * {@code 500}, and {@link SpillwayServletFilter} would never see it: the client would take a shed
 * request for a server error and retry it at once. Ordered first, this resolver hands the abort on
 * out of the dispatcher to the filter, which answers it as a reject with its pushback and ends the
 * permit as aborted (docs/design.md, "Request budget (ASQM)"). Only for a request the filter
 * admitted; anything else goes to the application's resolvers as before.
 *
 * <p>Thread-safe; stateless.
 */
public final class BudgetAbortExceptionResolver implements HandlerExceptionResolver, Ordered {

  @Override
  public ModelAndView resolveException(HttpServletRequest request, HttpServletResponse response,
      Object handler, Exception ex) {
    BudgetExceededException abort = SpillwayHttpGate.budgetExceeded(ex);
    if (abort != null && request.getAttribute(SpillwayServletFilter.ADMITTED) != null
        && !response.isCommitted()) {
      throw abort; // out of the dispatcher, to the filter
    }
    return null;
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }
}
