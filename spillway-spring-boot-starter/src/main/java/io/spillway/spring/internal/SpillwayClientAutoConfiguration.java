package io.spillway.spring.internal;

import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.spring.SpillwayHttpSession;
import io.spillway.spring.SpillwayHttpSessions;
import io.spillway.spring.SpillwayProperties;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import io.spillway.spring.RetryPushback;
import io.spillway.spring.SpillwayRestClientInterceptor;
import io.spillway.spring.SpillwayWebClientFilter;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
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
 * <p>They also speak Spillway's credits with each server they call ({@link SpillwayHttpSessions},
 * one session per server; off with {@code spillway.client.credits=false}), the HTTP twin of the
 * Spring gRPC channels' client interceptor: a request waits for its session's credit, and the
 * server's answers and credit stream bring more (docs/design.md, "A request's path on a client").
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

    /**
     * The sessions with the servers called, unless {@code spillway.client.credits=false} or the
     * scheme is {@code none}; their SLO is {@code spillway.client.slo}, else {@code spillway.slo}.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnBooleanProperty(name = "spillway.client.credits", matchIfMissing = true)
    @ConditionalOnExpression("!'${spillway.scheme:spillway}'.trim().equalsIgnoreCase('none')")
    SpillwayHttpSessions spillwayHttpSessions(SpillwayProperties properties, Ticker ticker,
        Scheduler scheduler) {
      Duration slo = properties.getClient().getSlo() != null ? properties.getClient().getSlo()
          : properties.getSlo();
      String scheme = properties.getScheme();
      return new SpillwayHttpSessions(slo.toNanos(),
          s -> SpillwayAutoConfiguration.scheme(scheme, s), ticker, scheduler,
          SpillwayHttpSession.CreditStreams.jdk());
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.restclient.RestClientCustomizer")
    static class Rest {

      @Bean
      RestClientCustomizer spillwayRestClientCustomizer(RetryPushback pushback,
          ObjectProvider<SpillwayHttpSessions> sessions) {
        SpillwayRestClientInterceptor interceptor =
            new SpillwayRestClientInterceptor(pushback, sessions.getIfAvailable());
        return builder -> builder.requestInterceptor(interceptor);
      }

      @Bean
      RestTemplateCustomizer spillwayRestTemplateCustomizer(RetryPushback pushback,
          ObjectProvider<SpillwayHttpSessions> sessions) {
        SpillwayRestClientInterceptor interceptor =
            new SpillwayRestClientInterceptor(pushback, sessions.getIfAvailable());
        return template -> template.getInterceptors().add(interceptor);
      }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.springframework.boot.webclient.WebClientCustomizer",
        "org.springframework.web.reactive.function.client.WebClient"})
    static class Reactive {

      @Bean
      WebClientCustomizer spillwayWebClientCustomizer(RetryPushback pushback,
          ObjectProvider<SpillwayHttpSessions> sessions) {
        SpillwayWebClientFilter filter =
            new SpillwayWebClientFilter(pushback, sessions.getIfAvailable());
        return builder -> builder.filter(filter);
      }
    }
  }
}
