package io.spillway.examples.spring.peers;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Optional;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Profile;
import org.springframework.core.Ordered;

/**
 * Profile {@code concurrency-limits}: Netflix concurrency-limits in front of {@code
 * /reservations} and {@code /statements}, the way its servlet filter applies a limiter (its
 * README, "Server limiter": {@code ConcurrencyLimitServletFilter} around a {@code
 * Limiter<HttpServletRequest>}): acquire a permit before the chain; {@code onSuccess} when the
 * chain returns, {@code onIgnore} when it throws, so a failure does not count as a latency sample;
 * a refusal answered {@code 429} with the chain not run. The limiter is a {@link SimpleLimiter}
 * with {@link Gradient2Limit}'s defaults ({@code Gradient2Limit.newDefault()}: initial limit 20,
 * at most 200, the gradient of the long-term to the short-term RTT).
 *
 * <p>Why not the library's own filter: {@code concurrency-limits-servlet-jakarta} is not served
 * by Maven Central here (no version of it resolves, 0.5.4 included, the version of {@code
 * concurrency-limits-core} used), so this class wires the core library's {@code Limiter} into a
 * Jakarta {@link Filter} the same way; nothing of the algorithm is reimplemented.
 *
 * <p>Thread-safe.
 */
@Configuration(proxyBeanMethods = false)
@Profile("concurrency-limits")
class ConcurrencyLimitsConfiguration {

  @Bean
  Limiter<HttpServletRequest> inventoryLimiter() {
    return SimpleLimiter.newBuilder().named("inventory").limit(Gradient2Limit.newDefault()).build();
  }

  @Bean
  FilterRegistrationBean<Filter> concurrencyLimitsFilter(Limiter<HttpServletRequest> limiter) {
    Filter filter = (ServletRequest request, ServletResponse response, FilterChain chain) ->
        limited(limiter, request, response, chain);
    FilterRegistrationBean<Filter> registration = new FilterRegistrationBean<>(filter);
    registration.addUrlPatterns("/reservations", "/statements");
    registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
    registration.setName("concurrencyLimits");
    return registration;
  }

  private static void limited(Limiter<HttpServletRequest> limiter, ServletRequest request,
      ServletResponse response, FilterChain chain) throws IOException, ServletException {
    Optional<Limiter.Listener> permit = limiter.acquire((HttpServletRequest) request);
    if (permit.isEmpty()) {
      ((HttpServletResponse) response).setStatus(429);
      response.getWriter().print("Concurrency limit exceeded");
      return;
    }
    try {
      chain.doFilter(request, response);
      permit.get().onSuccess();
    } catch (IOException | ServletException | RuntimeException e) {
      permit.get().onIgnore();
      throw e;
    }
  }
}
