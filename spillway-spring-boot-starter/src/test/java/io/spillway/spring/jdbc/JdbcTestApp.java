package io.spillway.spring.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import io.spillway.spring.app.ManualTicker;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring MVC application with the starter and a HikariCP pool of two connections over a
 * driverless fake database, plus a second, non-Hikari DataSource bean. The clock is a {@link
 * ManualTicker} bean, which the starter takes instead of the system clock. Tomcat, as in
 * {@code MvcTestApp}.
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.jetty.autoconfigure.servlet.JettyServletWebServerAutoConfiguration")
public class JdbcTestApp {

  public static final int POOL_SIZE = 2;

  @Bean
  ManualTicker ticker() {
    return new ManualTicker();
  }

  /** Declared as Spring Boot's own DataSource auto-configuration declares a Hikari pool. */
  @Bean
  @Primary
  HikariDataSource dataSource() {
    HikariDataSource pool = new HikariDataSource();
    pool.setPoolName("test-pool");
    pool.setMaximumPoolSize(POOL_SIZE);
    pool.setDataSource(new FakeDatabase());
    return pool;
  }

  @Bean
  DataSource plainDataSource() {
    return new FakeDatabase();
  }

  /** A component that takes the concrete pool, as code reading the pool's state does. */
  @org.springframework.stereotype.Component
  public static class PoolReader {
    private final HikariDataSource pool;

    PoolReader(HikariDataSource pool) {
      this.pool = pool;
    }

    public String poolName() {
      return pool.getPoolName();
    }

    public int maximumPoolSize() {
      return pool.getMaximumPoolSize();
    }
  }

  @RestController
  static class Db {
    private final DataSource dataSource;

    Db(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    @GetMapping("/db")
    String db() throws SQLException {
      try (Connection c = dataSource.getConnection()) {
        return c.getAutoCommit() ? "ok" : "no auto-commit";
      }
    }
  }

  /** Hands out connections that answer what a pool asks with neutral values. */
  public static final class FakeDatabase implements DataSource {
    @Override
    public Connection getConnection() {
      return (Connection) Proxy.newProxyInstance(FakeDatabase.class.getClassLoader(),
          new Class<?>[] {Connection.class}, (proxy, method, args) -> {
            return switch (method.getName()) {
              case "isValid", "getAutoCommit" -> true;
              case "getTransactionIsolation" -> Connection.TRANSACTION_READ_COMMITTED;
              case "equals" -> proxy == args[0];
              case "hashCode" -> System.identityHashCode(proxy);
              case "toString" -> "fake connection";
              default -> neutral(method.getReturnType());
            };
          });
    }

    private static Object neutral(Class<?> type) {
      if (type == boolean.class) {
        return Boolean.FALSE;
      }
      if (type == int.class) {
        return Integer.valueOf(0);
      }
      if (type == long.class) {
        return Long.valueOf(0);
      }
      return null;
    }

    @Override
    public Connection getConnection(String username, String password) {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
