package io.spillway.examples.spring.peers;

import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Profile;
import org.springframework.core.Ordered;

/**
 * Profile {@code resilience4j}: Resilience4j's semaphore {@link Bulkhead} in front of {@code
 * /reservations} and {@code /statements}, with its documented defaults ({@link
 * BulkheadConfig#ofDefaults()}: at most 25 concurrent calls, a call that finds them all taken
 * waits 0 ms and is refused; Resilience4j's "Bulkhead" guide,
 * resilience4j.readme.io/docs/bulkhead, "Create and configure a Bulkhead"). A refused call is
 * answered {@code 503}, as a Spring team maps {@code BulkheadFullException}.
 *
 * <p>Why the core {@code Bulkhead} in a servlet filter and not {@code resilience4j-spring-boot3}:
 * that starter is built for Spring Boot 3 and this application is on Boot 4.0 (no Resilience4j
 * starter for Boot 4 is among the versions resolved here); its {@code @Bulkhead} annotation
 * applies this same core {@code Bulkhead}, with the same defaults, around a bean method. A filter
 * puts the decision where the other configurations make theirs, before Spring MVC.
 *
 * <p>Thread-safe.
 */
@Configuration(proxyBeanMethods = false)
@Profile("resilience4j")
class Resilience4jBulkheadConfiguration {

  @Bean
  Bulkhead inventoryBulkhead() {
    return Bulkhead.of("inventory", BulkheadConfig.ofDefaults());
  }

  @Bean
  FilterRegistrationBean<Filter> resilience4jBulkheadFilter(Bulkhead bulkhead) {
    Filter filter = (ServletRequest request, ServletResponse response, FilterChain chain) ->
        bulkheaded(bulkhead, request, response, chain);
    FilterRegistrationBean<Filter> registration = new FilterRegistrationBean<>(filter);
    registration.addUrlPatterns("/reservations", "/statements");
    registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
    registration.setName("resilience4jBulkhead");
    return registration;
  }

  private static void bulkheaded(Bulkhead bulkhead, ServletRequest request,
      ServletResponse response, FilterChain chain) throws IOException, ServletException {
    if (!bulkhead.tryAcquirePermission()) {
      ((HttpServletResponse) response).sendError(HttpServletResponse.SC_SERVICE_UNAVAILABLE,
          "bulkhead full");
      return;
    }
    try {
      chain.doFilter(request, response);
    } finally {
      bulkhead.onComplete();
    }
  }
}
