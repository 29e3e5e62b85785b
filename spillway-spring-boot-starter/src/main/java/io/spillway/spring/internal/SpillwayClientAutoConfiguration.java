package io.spillway.spring.internal;

import io.spillway.api.Ticker;
import io.spillway.spring.RetryPushback;
import io.spillway.spring.SpillwayRestClientInterceptor;
import io.spillway.spring.SpillwayWebClientFilter;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.restclient.RestClientCustomizer;
import org.springframework.boot.restclient.RestTemplateCustomizer;
import org.springframework.boot.webclient.WebClientCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The client side, on the builders Spring Boot hands an application ({@code RestClient.Builder},
 * {@code RestTemplateBuilder}, {@code WebClient.Builder}): every client built from them carries
 * the budget of the request being served to the service it calls, and holds off a server that
 * shed its requests for as long as the server asked (docs/design.md, "Clients that do not speak
 * Spillway": every reject says when to come back, so retries back off instead of amplifying the
 * overload). One {@link RetryPushback} serves all of them, so every client of the application
 * hears what any one was told.
 *
 * <p>Clients the application builds with {@code RestClient.builder()} itself do not pass through
 * Boot's customizers; {@link SpillwayRestClientInterceptor}'s javadoc shows the one line they need.
 * Off with {@code spillway.client.enabled=false} (or {@code spillway.enabled=false}).
 */
@AutoConfiguration(after = SpillwayAutoConfiguration.class)
@ConditionalOnBooleanProperty(name = "spillway.enabled", matchIfMissing = true)
public class SpillwayClientAutoConfiguration {

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBooleanProperty(name = "spillway.client.enabled", matchIfMissing = true)
  static class Clients {

    @Bean
    @ConditionalOnMissingBean
    RetryPushback spillwayRetryPushback(Ticker ticker) {
      return new RetryPushback(ticker);
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.restclient.RestClientCustomizer")
    static class Rest {

      @Bean
      RestClientCustomizer spillwayRestClientCustomizer(RetryPushback pushback) {
        SpillwayRestClientInterceptor interceptor = new SpillwayRestClientInterceptor(pushback);
        return builder -> builder.requestInterceptor(interceptor);
      }

      @Bean
      RestTemplateCustomizer spillwayRestTemplateCustomizer(RetryPushback pushback) {
        SpillwayRestClientInterceptor interceptor = new SpillwayRestClientInterceptor(pushback);
        return template -> template.getInterceptors().add(interceptor);
      }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.springframework.boot.webclient.WebClientCustomizer",
        "org.springframework.web.reactive.function.client.WebClient"})
    static class Reactive {

      @Bean
      WebClientCustomizer spillwayWebClientCustomizer(RetryPushback pushback) {
        SpillwayWebClientFilter filter = new SpillwayWebClientFilter(pushback);
        return builder -> builder.filter(filter);
      }
    }
  }
}
