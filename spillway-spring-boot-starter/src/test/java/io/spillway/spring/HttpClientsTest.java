package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import io.spillway.spring.app.ManualTicker;
import io.spillway.spring.internal.SpillwayAutoConfiguration;
import io.spillway.spring.internal.SpillwayClientAutoConfiguration;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.restclient.RestTemplateBuilder;
import org.springframework.boot.restclient.autoconfigure.RestClientAutoConfiguration;
import org.springframework.boot.restclient.autoconfigure.RestTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.webclient.autoconfigure.WebClientAutoConfiguration;
import org.springframework.web.client.HttpServerErrorException;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestTemplate;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * The starter adds its client side to the builders Spring Boot hands the application: a client
 * built from {@code RestClient.Builder}, {@code RestTemplateBuilder} or {@code WebClient.Builder}
 * carries the budget of the request being served and holds off a server that answered {@code 503}
 * for as long as it asked, across every client of the application. The server here is not
 * Spillway's (no credit stream), so the clients' sessions send at once.
 */
class HttpClientsTest {

  /** A server that answers 503 with a one-minute pushback while {@link #shedding}, else 200. */
  private HttpServer server;
  private final AtomicInteger received = new AtomicInteger();
  private final List<String> budgets = new CopyOnWriteArrayList<>();
  private volatile boolean shedding;
  private final ManualTicker ticker = new ManualTicker();

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      if (exchange.getRequestURI().getPath().equals("/spillway/credits")) {
        exchange.sendResponseHeaders(404, -1); // not a Spillway server
        exchange.close();
        return;
      }
      received.incrementAndGet();
      String budget = exchange.getRequestHeaders().getFirst(SpillwayHttpHeaders.BUDGET);
      budgets.add(budget == null ? "none" : budget);
      exchange.getRequestBody().readAllBytes();
      if (shedding) {
        exchange.getResponseHeaders().set(SpillwayHttpHeaders.RETRY_PUSHBACK_MS, "60000");
        exchange.getResponseHeaders().set(SpillwayHttpHeaders.RETRY_AFTER, "60");
        exchange.sendResponseHeaders(503, -1);
      } else {
        byte[] body = "ok".getBytes();
        exchange.sendResponseHeaders(200, body.length);
        exchange.getResponseBody().write(body);
      }
      exchange.close();
    });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withBean(Ticker.class, () -> ticker)
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayClientAutoConfiguration.class, RestClientAutoConfiguration.class,
            RestTemplateAutoConfiguration.class, WebClientAutoConfiguration.class));
  }

  @Test
  void aRestClientFromBootsBuilderCarriesTheBudgetAndHoldsAShedServerOffForEveryClient() {
    runner().run(context -> {
      RestClient.Builder builder = context.getBean(RestClient.Builder.class);
      RestClient one = builder.clone().baseUrl(url()).build();
      RestClient other = builder.clone().baseUrl(url()).build();

      String body = ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(5_000_000))
          .call(() -> one.get().uri("/a").retrieve().body(String.class));
      assertThat(body).isEqualTo("ok");
      assertThat(budgets).hasSize(1);
      assertThat(Long.parseLong(budgets.get(0))).isBetween(1L, 5_000_000L);
      one.get().uri("/a").retrieve().body(String.class); // no request being served: no budget
      assertThat(budgets.get(1)).isEqualTo("none");

      shedding = true;
      assertThatThrownBy(() -> one.get().uri("/a").retrieve().body(String.class))
          .isInstanceOf(HttpServerErrorException.ServiceUnavailable.class);
      assertThat(received).hasValue(3);
      // held off for the minute it asked, by every client built from the builder: not sent
      assertThatThrownBy(() -> other.get().uri("/b").retrieve().body(String.class))
          .isInstanceOfSatisfying(SpillwayRejectedException.class,
              e -> assertThat(e.retryAfterMillis()).isEqualTo(60_000));
      assertThat(received).hasValue(3);
      shedding = false;
      ticker.advanceMillis(60_000);
      assertThat(other.get().uri("/b").retrieve().body(String.class)).isEqualTo("ok");
      assertThat(received).hasValue(4);
      // its session found the server is not Spillway's: its requests went at once
      assertThat(context.getBean(SpillwayHttpSessions.class).sessions().values())
          .singleElement().satisfies(s -> assertThat(s.isPassThrough()).isTrue());
    });
  }

  @Test
  void restTemplatesAndWebClientsShareTheHoldOff() {
    runner().run(context -> {
      RestTemplate template = context.getBean(RestTemplateBuilder.class).rootUri(url()).build();
      WebClient web = context.getBean(WebClient.Builder.class).baseUrl(url()).build();
      shedding = true;
      assertThatThrownBy(() -> template.getForObject("/a", String.class))
          .isInstanceOf(HttpServerErrorException.ServiceUnavailable.class);
      assertThat(received).hasValue(1);
      assertThatThrownBy(() -> web.get().uri("/b").retrieve().bodyToMono(String.class).block())
          .isInstanceOf(SpillwayRejectedException.class);
      assertThatThrownBy(() -> template.getForObject("/a", String.class))
          .isInstanceOf(SpillwayRejectedException.class);
      assertThat(received).hasValue(1);
    });
  }

  /**
   * With {@code spillway.scheme=none} there are no credits to wait for: the clients carry the
   * budget and honour pushback, and keep no session per server (no Spillway-Session headers, no
   * state per origin called), as the sessions' bean says.
   */
  @Test
  void withSchemeNoneTheClientsKeepNoSessions() {
    runner().withPropertyValues("spillway.scheme=none").run(context -> {
      assertThat(context).hasNotFailed();
      assertThat(context).hasSingleBean(RetryPushback.class);
      assertThat(context).doesNotHaveBean(SpillwayHttpSessions.class);
    });
  }

  @Test
  void offByPropertyTheClientsAreBootsOwn() {
    runner().withPropertyValues("spillway.client.enabled=false").run(context -> {
      assertThat(context).doesNotHaveBean(RetryPushback.class);
      RestClient client = context.getBean(RestClient.Builder.class).baseUrl(url()).build();
      shedding = true;
      for (int i = 0; i < 2; i++) {
        assertThatThrownBy(() -> client.get().uri("/a").retrieve().body(String.class))
            .isInstanceOf(HttpServerErrorException.ServiceUnavailable.class);
      }
      assertThat(received).hasValue(2);
    });
  }
}
