package io.spillway.examples.spring.statements;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedDataSource;
import io.spillway.examples.spring.InventoryApplication;
import io.spillway.spring.SpillwayHttpHeaders;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.ActiveProfiles;

/**
 * The statements profile as it ships, on an in-memory H2 database instead of PostgreSQL and a pool
 * of two: the endpoint answers a customer's statement from the table it filled, Boot's HikariCP
 * pool reaches the service wrapped by the Spillway starter (and still of its own class), and a
 * request whose budget the pool's queue would outlast is answered 429 with the budget reason at
 * once, through Spring's {@code JdbcTemplate}, not 500 and not after a wait.
 */
@SpringBootTest(classes = {InventoryApplication.class, StatementsTest.Clock.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.grpc.server.port=0", "inventory.work=20us",
        "spring.datasource.url=jdbc:h2:mem:statements;DB_CLOSE_DELAY=-1",
        "spring.datasource.username=sa", "spring.datasource.hikari.maximum-pool-size=2",
        "statements.customers=10", "statements.orders=5000"})
@ActiveProfiles("statements")
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class StatementsTest {

  /** A clock the test moves by hand (the starter takes a Ticker bean over the system clock). */
  @TestConfiguration
  static class Clock {
    static final AtomicLong NOW = new AtomicLong(Long.MAX_VALUE - 3_600_000_000_000L);

    @Bean
    Ticker ticker() {
      return NOW::get;
    }
  }

  @LocalServerPort
  int port;
  @Autowired
  DataSource dataSource;
  @Autowired
  JdbcTemplate jdbc;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();

  @Test
  void aStatementSumsTheCustomersOrdersByMonth() throws Exception {
    HttpResponse<String> answer = get("/statements?customer=3");
    assertEquals(200, answer.statusCode(), answer.body());
    assertTrue(answer.body().startsWith("{\"customer\":3,\"months\":["), answer.body());
    long orders = jdbc.queryForObject("select count(*) from statement_orders where customer_id = 3",
        Long.class);
    long listed = 0;
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"orders\":(\\d+)")
        .matcher(answer.body());
    while (m.find()) {
      listed += Long.parseLong(m.group(1));
    }
    assertTrue(orders > 0, "customer 3 has orders");
    assertEquals(orders, listed, answer.body());
    assertEquals(5000L, jdbc.queryForObject("select count(*) from statement_orders", Long.class));
  }

  @Test
  void bootsPoolIsBudgetedAndARequestItsQueueWouldOutlastIsRefusedAtOnce() throws Exception {
    assertInstanceOf(HikariDataSource.class, dataSource);
    BudgetedDataSource budgeted = dataSource.unwrap(BudgetedDataSource.class);
    assertEquals(2, budgeted.permits().permits());
    assertEquals(200, get("/statements").statusCode());

    Connection a = dataSource.getConnection(); // no budget in scope: taken as from a plain pool
    Connection b = dataSource.getConnection();
    Thread waiter = Thread.ofPlatform().daemon().start(() -> {
      try (Connection c = dataSource.getConnection()) {
        c.getAutoCommit();
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    while (!(budgeted.permits().waiters() == 1 && budgeted.permits().hasQueuedThread(waiter))) {
      Thread.yield();
    }
    Clock.NOW.addAndGet(TimeUnit.MINUTES.toNanos(1)); // the waiter has queued a minute

    HttpResponse<String> refused = get("/statements");
    assertEquals(429, refused.statusCode(), refused.body());
    assertEquals(Integer.toString(Status.REJECTED_BUDGET.code()),
        refused.headers().firstValue(SpillwayHttpHeaders.STATUS).orElseThrow());
    assertEquals(1, budgeted.permits().waiters(), "the refused request never queued");

    a.close();
    waiter.join();
    b.close();
    assertEquals(200, get("/statements").statusCode());
    assertEquals(2, budgeted.permits().availablePermits());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
