package io.spillway.asqm;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.Ticker;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A {@link DataSource} whose {@link #getConnection()} waits for the pool under a request's
 * queueing budget: Protego's ASQM (protego-nsdi23 §3.2) at the wait a Java service most often
 * queues in, a connection pool (HikariCP waits up to its {@code connectionTimeout}, 30 s by
 * default, for a connection).
 *
 * <p>It holds a {@link BudgetedSemaphore} with as many permits as the wrapped pool has
 * connections. {@link #getConnection()} first takes a permit with {@link
 * BudgetedSemaphore#acquireWithinBudget()}: a request whose remaining budget the pool's queue
 * would outlast is refused at once with {@link BudgetExceededException} (which the gRPC and HTTP
 * layers answer with a fast reject), instead of waiting for a connection it would get too late;
 * one that fits waits in this semaphore's queue, where its wait is stamped and charged to its
 * budget, and then asks the pool, which has a connection for every permit. With no budget in scope
 * it waits as a plain pool would. Either wait ends as the pool's own would have: after the pool's
 * connection timeout ({@link SQLTransientConnectionException}, as HikariCP throws after its {@code
 * connectionTimeout}), or at an interrupt ({@link SQLException}, the interrupt status kept). The
 * permits stand in for the pool's connections, so a connection that leaks holds a permit and the
 * pool's own timeout is never reached: without this one a leak would hang every later caller. The returned {@link Connection} is a wrapper whose {@link
 * Connection#close()} returns the permit exactly once, also when the pool's close throws; if the
 * pool's {@code getConnection} throws, the permit is returned before the exception propagates.
 *
 * <p>The permit count must not exceed the pool's size, or requests queue inside the pool again,
 * unseen; it may be smaller (then this is a bulkhead in front of the pool). Given the pool's size
 * as a supplier, it follows a pool resized at run time. A connection that is
 * never closed keeps its permit, as it keeps its pooled connection. {@link #unwrap} and {@link
 * #isWrapperFor} answer for this wrapper and then the pool; {@link #createConnectionBuilder} is
 * not supported, since a builder's connection would bypass the permit.
 *
 * <p><b>Thread-safety:</b> thread-safe, as the wrapped pool must be. A connection may be closed
 * from any thread.
 */
public final class BudgetedDataSource implements DataSource {

  private final DataSource pool;
  private final BudgetedSemaphore permits;
  /** The pool's size as it reports it now, followed on each connection; {@code null}: fixed. */
  private final IntSupplier poolSize;
  /** How long a caller waits for a permit, ms, as the pool reports it now. */
  private final LongSupplier connectionTimeoutMillis;

  /** HikariCP's default {@code connectionTimeout}: the wait of a pool that says nothing of its own. */
  public static final long DEFAULT_CONNECTION_TIMEOUT_MILLIS = 30_000;

  /** Wraps {@code pool}, which holds {@code poolSize} connections, on the system clock. */
  public BudgetedDataSource(DataSource pool, int poolSize) {
    this(pool, poolSize, Ticker.system());
  }

  /**
   * Wraps {@code pool}, which holds {@code poolSize} connections, stamping waiters with {@code
   * ticker} (the clock the requests' budgets are measured with).
   *
   * @throws IllegalArgumentException if {@code poolSize < 1}
   */
  public BudgetedDataSource(DataSource pool, int poolSize, Ticker ticker) {
    this.pool = Objects.requireNonNull(pool, "pool");
    this.permits = new BudgetedSemaphore(poolSize, ticker);
    this.poolSize = null;
    this.connectionTimeoutMillis = () -> DEFAULT_CONNECTION_TIMEOUT_MILLIS;
  }

  /**
   * Wraps {@code pool}, whose size {@code poolSize} reports, and follows it: the size is read on
   * each {@link #getConnection()} and a change resizes the permits ({@link
   * BudgetedSemaphore#setPermits}). A pool that an operator enlarges at run time (HikariCP's
   * {@code setMaximumPoolSize} over JMX, often the first move when the database pool is the
   * bottleneck) would otherwise stay behind the old count, its new connections unused; a smaller
   * one would let requests queue inside the pool again, unseen. A reading below 1 is ignored.
   *
   * @throws IllegalArgumentException if the size it reports now is below 1
   */
  public BudgetedDataSource(DataSource pool, IntSupplier poolSize, Ticker ticker) {
    this(pool, poolSize, () -> DEFAULT_CONNECTION_TIMEOUT_MILLIS, ticker);
  }

  /**
   * As {@link #BudgetedDataSource(DataSource, IntSupplier, Ticker)}, a caller waiting at most
   * {@code connectionTimeoutMillis} for a connection, as the pool reports it on each {@link
   * #getConnection()} (HikariCP's {@code connectionTimeout}); a reading below 1 waits 1 ms.
   *
   * @throws IllegalArgumentException if the size it reports now is below 1
   */
  public BudgetedDataSource(DataSource pool, IntSupplier poolSize,
      LongSupplier connectionTimeoutMillis, Ticker ticker) {
    this.pool = Objects.requireNonNull(pool, "pool");
    this.poolSize = Objects.requireNonNull(poolSize, "poolSize");
    this.connectionTimeoutMillis =
        Objects.requireNonNull(connectionTimeoutMillis, "connectionTimeoutMillis");
    this.permits = new BudgetedSemaphore(poolSize.getAsInt(), ticker);
  }

  /** Resizes the permits if the pool's reported size has changed. */
  private void followPoolSize() {
    if (poolSize != null) {
      int size = poolSize.getAsInt();
      if (size >= 1 && size != permits.permits()) {
        permits.setPermits(size);
      }
    }
  }

  /** The semaphore in front of the pool: its queueing delay, waiters and free permits. */
  public BudgetedSemaphore permits() {
    return permits;
  }

  /**
   * A connection from the pool, once a permit is taken within the budget in scope.
   *
   * @throws BudgetExceededException if the pool's expected wait exceeds the remaining budget
   */
  @Override
  public Connection getConnection() throws SQLException {
    followPoolSize();
    BudgetedSemaphore.Permit permit = permit();
    try {
      return wrap(pool.getConnection(), permit);
    } catch (Throwable e) {
      permit.close();
      throw e;
    }
  }

  /** As {@link #getConnection()}, with credentials. */
  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    followPoolSize();
    BudgetedSemaphore.Permit permit = permit();
    try {
      return wrap(pool.getConnection(username, password), permit);
    } catch (Throwable e) {
      permit.close();
      throw e;
    }
  }

  /** A permit within the budget in scope, waiting at most the pool's connection timeout. */
  private BudgetedSemaphore.Permit permit() throws SQLException {
    long timeout = Math.max(1, connectionTimeoutMillis.getAsLong());
    BudgetedSemaphore.Permit permit;
    try {
      permit = permits.acquireWithinBudget(timeout, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLException("interrupted while waiting for a connection", e);
    }
    if (permit == null) {
      throw new SQLTransientConnectionException("no connection within " + timeout + " ms: the "
          + permits.permits() + " connection(s) of the pool are in use");
    }
    return permit;
  }

  private static Connection wrap(Connection connection, BudgetedSemaphore.Permit permit) {
    if (connection == null) {
      throw new IllegalStateException("the pool returned no connection");
    }
    return (Connection) Proxy.newProxyInstance(BudgetedDataSource.class.getClassLoader(),
        new Class<?>[] {Connection.class}, new PermitConnection(connection, permit));
  }

  /** Not supported: a connection built elsewhere would not hold a permit. */
  @Override
  public java.sql.ConnectionBuilder createConnectionBuilder() throws SQLException {
    throw new SQLFeatureNotSupportedException("BudgetedDataSource hands out connections only "
        + "through getConnection, which takes a permit");
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return pool.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    pool.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    pool.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return pool.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return pool.getParentLogger();
  }

  /** This wrapper if it is an {@code iface}, else the pool's {@code unwrap}. */
  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    return pool.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || iface.isInstance(pool) || pool.isWrapperFor(iface);
  }

  @Override
  public String toString() {
    return "BudgetedDataSource[" + permits + ", " + pool + "]";
  }

  /** The connection wrapper: {@code close} also returns the permit; the rest is delegated. */
  private static final class PermitConnection implements InvocationHandler {
    private final Connection connection;
    private final BudgetedSemaphore.Permit permit;

    PermitConnection(Connection connection, BudgetedSemaphore.Permit permit) {
      this.connection = connection;
      this.permit = permit;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      switch (method.getName()) {
        case "close" -> {
          if (method.getParameterCount() == 0) {
            try {
              return call(method, args);
            } finally {
              permit.close();
            }
          }
        }
        case "unwrap" -> {
          Class<?> iface = (Class<?>) args[0];
          if (iface.isInstance(proxy)) {
            return proxy;
          }
        }
        case "isWrapperFor" -> {
          if (((Class<?>) args[0]).isInstance(proxy)) {
            return true;
          }
        }
        case "equals" -> {
          return proxy == args[0];
        }
        case "hashCode" -> {
          return System.identityHashCode(proxy);
        }
        case "toString" -> {
          return "BudgetedConnection[" + connection + "]";
        }
        default -> { }
      }
      return call(method, args);
    }

    private Object call(Method method, Object[] args) throws Throwable {
      try {
        return method.invoke(connection, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }
}
