package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import io.spillway.api.Status;
import io.spillway.asqm.BudgetedDataSource;
import io.spillway.spring.app.ManualTicker;
import io.spillway.spring.jdbc.JdbcTestApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The starter puts a {@link BudgetedDataSource} sized to the pool in front of a HikariCP DataSource
 * bean, keeping the bean's class,
 * so a request whose budget the pool's queue would outlast is answered 429 at once instead of
 * waiting for a connection (Protego's ASQM, protego-nsdi23 §3.2); a DataSource whose size it
 * cannot read is left alone.
 */
@SpringBootTest(classes = JdbcTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BudgetedDataSourceWrappingTest {

  @LocalServerPort
  int port;
  @Autowired
  DataSource dataSource;
  @Autowired
  @Qualifier("plainDataSource")
  DataSource plain;
  @Autowired
  ManualTicker ticker;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();

  @Autowired
  JdbcTestApp.PoolReader poolReader;

  @Test
  void theHikariPoolIsWrappedAndSizedToItsMaximumAndOthersAreNot() throws Exception {
    assertTrue(dataSource.isWrapperFor(BudgetedDataSource.class));
    BudgetedDataSource wrapped = dataSource.unwrap(BudgetedDataSource.class);
    assertEquals(JdbcTestApp.POOL_SIZE, wrapped.permits().permits());
    assertEquals("test-pool", dataSource.unwrap(HikariDataSource.class).getPoolName());
    assertFalse(plain.isWrapperFor(BudgetedDataSource.class));
  }

  /**
   * The wrapper's permits stand in for the pool's connections, so with every connection taken (a
   * leak) a caller waits for a permit, not in the pool: that wait ends at the pool's own {@code
   * connectionTimeout}, read from the pool (and followed when changed at run time), with the
   * exception HikariCP throws then.
   */
  @Test
  void aCallerWaitsNoLongerThanThePoolsConnectionTimeout() throws Exception {
    HikariDataSource hikari = dataSource.unwrap(HikariDataSource.class);
    long before = hikari.getConnectionTimeout();
    hikari.setConnectionTimeout(250);
    List<Connection> leaked = new java.util.ArrayList<>();
    try {
      for (int i = 0; i < JdbcTestApp.POOL_SIZE; i++) {
        leaked.add(dataSource.getConnection());
      }
      java.sql.SQLTransientConnectionException timedOut = org.junit.jupiter.api.Assertions
          .assertThrows(java.sql.SQLTransientConnectionException.class, dataSource::getConnection);
      assertTrue(timedOut.getMessage().contains("250 ms"), timedOut.getMessage());
    } finally {
      for (Connection c : leaked) {
        c.close();
      }
      hikari.setConnectionTimeout(before);
    }
  }

  /**
   * The bean keeps its class: a component that injects the concrete {@code HikariDataSource}
   * (to read the pool's state, or Spring Boot's pool metrics) starts, and what it reads is the
   * pool's.
   */
  @Test
  void codeThatInjectsTheConcreteHikariPoolStillGetsIt() {
    assertInstanceOf(HikariDataSource.class, dataSource);
    assertEquals("test-pool", poolReader.poolName());
    assertEquals(JdbcTestApp.POOL_SIZE, poolReader.maximumPoolSize());
  }

  @Test
  void aRequestWhoseBudgetThePoolQueueWouldOutlastIsRefusedAtOnce() throws Exception {
    BudgetedDataSource wrapped = dataSource.unwrap(BudgetedDataSource.class);
    assertEquals(200, get("/db").statusCode());
    Connection a = dataSource.getConnection(); // no budget in scope: taken as from a plain pool
    Connection b = dataSource.getConnection();
    Thread waiter = Thread.ofPlatform().daemon().start(() -> {
      try (Connection c = dataSource.getConnection()) {
        c.getAutoCommit();
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    while (!(wrapped.permits().waiters() == 1 && wrapped.permits().hasQueuedThread(waiter))) {
      Thread.yield();
    }
    ticker.advanceMillis(60_000); // the waiter has queued a minute: far past any request's budget

    HttpResponse<String> refused = get("/db");
    assertEquals(429, refused.statusCode());
    assertEquals(Integer.toString(Status.REJECTED_BUDGET.code()),
        refused.headers().firstValue(SpillwayHttpHeaders.STATUS).orElseThrow());
    assertEquals(1, wrapped.permits().waiters(), "the refused request never queued");

    a.close();
    waiter.join();
    b.close();
    assertEquals(200, get("/db").statusCode());
    assertEquals(JdbcTestApp.POOL_SIZE, wrapped.permits().availablePermits());
  }

  /**
   * An operator enlarges the pool over JMX under load: the wrapper follows on the next connection,
   * so the new connections are used instead of being held back by the old count.
   */
  @Test
  @org.junit.jupiter.api.Timeout(value = 60, threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
  void aPoolResizedAtRunTimeIsFollowed() throws Exception {
    BudgetedDataSource wrapped = dataSource.unwrap(BudgetedDataSource.class);
    com.zaxxer.hikari.HikariConfigMXBean config =
        dataSource.unwrap(HikariDataSource.class).getHikariConfigMXBean();
    List<Connection> held = new java.util.ArrayList<>();
    try {
      config.setMaximumPoolSize(JdbcTestApp.POOL_SIZE + 1);
      for (int i = 0; i < JdbcTestApp.POOL_SIZE + 1; i++) {
        held.add(dataSource.getConnection()); // the last one would wait forever at the old count
      }
      assertEquals(JdbcTestApp.POOL_SIZE + 1, wrapped.permits().permits());
      assertEquals(0, wrapped.permits().availablePermits());
    } finally {
      for (Connection c : held) {
        c.close();
      }
      config.setMaximumPoolSize(JdbcTestApp.POOL_SIZE);
      dataSource.getConnection().close();
    }
    assertEquals(JdbcTestApp.POOL_SIZE, wrapped.permits().permits());
    assertEquals(JdbcTestApp.POOL_SIZE, wrapped.permits().availablePermits());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
