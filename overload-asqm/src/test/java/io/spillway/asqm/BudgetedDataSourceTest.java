package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.api.testing.VirtualClock;
import io.spillway.asqm.BudgetedLockTest.Worker;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link BudgetedDataSource} over a fake pool (no database): refusal before the pool when the
 * budget is too small for the queue, the permit returned on close and on every exception, and no
 * permit leaked over seeded random sequences of opens, closes and failures.
 */
// A separate thread: a leaked permit leaves an uninterruptible acquire hanging, which the
// default mode's interrupt would not end.
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BudgetedDataSourceTest {

  /**
   * A pool that counts what it hands out; its connections are proxies that count their closes.
   * {@code failGets} and {@code failCloses} make the next calls throw, as a broken pool would.
   */
  static final class FakePool implements DataSource {
    final AtomicInteger gets = new AtomicInteger();
    final AtomicInteger live = new AtomicInteger();
    final AtomicInteger maxLive = new AtomicInteger();
    final AtomicInteger failGets = new AtomicInteger();
    final AtomicInteger failCloses = new AtomicInteger();
    int loginTimeout;

    @Override
    public Connection getConnection() throws SQLException {
      gets.incrementAndGet();
      if (failGets.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        throw new SQLException("pool exhausted");
      }
      maxLive.accumulateAndGet(live.incrementAndGet(), Math::max);
      AtomicInteger closes = new AtomicInteger();
      return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
          new Class<?>[] {Connection.class}, (proxy, method, args) -> switch (method.getName()) {
            case "close" -> {
              if (closes.getAndIncrement() == 0) {
                live.decrementAndGet();
              }
              if (failCloses.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new SQLException("close failed");
              }
              yield null;
            }
            case "isClosed" -> closes.get() > 0;
            case "getAutoCommit" -> true;
            case "unwrap" -> "raw connection";
            case "isWrapperFor" -> args[0] == String.class;
            case "toString" -> "fake";
            default -> throw new UnsupportedOperationException(method.getName());
          });
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {
      loginTimeout = seconds;
    }

    @Override
    public int getLoginTimeout() {
      return loginTimeout;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      if (iface.isInstance(this)) {
        return iface.cast(this);
      }
      throw new SQLException("not a wrapper for " + iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return iface.isInstance(this);
    }
  }

  final FakePool pool = new FakePool();
  final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000);

  static <T, X extends Throwable> T withBudget(RequestBudget budget,
      ScopedValue.CallableOp<T, X> op) throws X {
    return ScopedValue.where(RequestBudget.CURRENT, budget).call(op);
  }

  /** Given the pool's size as a supplier, the permits follow it on the next connection. */
  @Test
  void aPoolResizedAtRunTimeIsFollowed() throws Exception {
    AtomicInteger size = new AtomicInteger(1);
    BudgetedDataSource source = new BudgetedDataSource(pool, size::get, clock);
    Connection first = source.getConnection();
    size.set(2);
    Connection second = source.getConnection(); // at the old count this would wait for the first
    assertEquals(2, source.permits().permits());
    assertEquals(2, pool.maxLive.get());
    size.set(0); // a reading below 1 is ignored
    second.close();
    first.close();
    source.getConnection().close();
    assertEquals(2, source.permits().permits());
    size.set(1);
    source.getConnection().close();
    assertEquals(1, source.permits().availablePermits());
    assertThrows(IllegalArgumentException.class,
        () -> new BudgetedDataSource(pool, () -> 0, clock));
  }

  /**
   * Pool of 1, its connection held, one request queued since t; at t + 1,000 a request with
   * 500 ns left is refused before it reaches the pool, one with 1,000 ns queues and is charged.
   * The clock is only moved while every other thread is parked.
   */
  @Test
  void aRequestWhoseBudgetThePoolQueueWouldOutlastIsRefusedBeforeThePool() throws Exception {
    BudgetedDataSource source = new BudgetedDataSource(pool, 1, clock);
    Connection held = source.getConnection();
    Worker<Void> queued = new Worker<>(() -> {
      source.getConnection().close();
      return null;
    });
    Await.until(() -> source.permits().hasQueuedThread(queued.thread));
    clock.advance(1_000);
    assertEquals(1_000, source.permits().queueingDelayNanos(clock.read()));

    RequestBudget tight = RequestBudget.of(500);
    BudgetExceededException refused = assertThrows(BudgetExceededException.class,
        () -> withBudget(tight, source::getConnection));
    assertEquals(1_000, refused.queueingDelayNanos());
    assertEquals(500, refused.remainingBudgetNanos());
    assertEquals(500, tight.remainingNanos(), "refused before waiting: nothing charged");
    assertEquals(1, pool.gets.get(), "the refused request never asked the pool");

    RequestBudget enough = RequestBudget.of(1_000);
    Worker<Long> fits = new Worker<>(() -> withBudget(enough, () -> {
      try (Connection c = source.getConnection()) {
        assertTrue(c.getAutoCommit());
      }
      return enough.remainingNanos();
    }));
    Await.until(() -> source.permits().waiters() == 2
        && source.permits().hasQueuedThread(fits.thread));
    clock.advance(300); // fits waits 300 ns
    held.close();
    queued.join();
    assertEquals(700, fits.join(), "charged the 300 ns it waited for the pool");
    assertEquals(1, source.permits().availablePermits());
    assertEquals(0, pool.live.get());
    assertEquals(1, pool.maxLive.get(), "never more connections out than permits");
  }

  @Test
  void withoutABudgetItWaitsAsAPlainPool() throws Exception {
    BudgetedDataSource source = new BudgetedDataSource(pool, 1, clock);
    Connection held = source.getConnection();
    Worker<Void> first = new Worker<>(() -> {
      source.getConnection().close();
      return null;
    });
    Await.until(() -> source.permits().hasQueuedThread(first.thread));
    clock.advance(TimeUnit.HOURS.toNanos(1));
    Worker<Boolean> unbudgeted = new Worker<>(() -> {
      try (Connection c = source.getConnection("user", "secret")) {
        return !c.isClosed();
      }
    });
    Await.until(() -> source.permits().waiters() == 2
        && source.permits().hasQueuedThread(unbudgeted.thread));
    held.close();
    first.join();
    assertTrue(unbudgeted.join());
    assertEquals(1, source.permits().availablePermits());
  }

  /**
   * A leaked connection holds its permit, so the pool's own timeout is never reached: the wait for
   * a permit ends as the pool's would, after its connection timeout (here 1 ms) with a transient
   * connection exception, budget in scope or not, and at an interrupt with an SQLException and the
   * interrupt status kept; no permit is taken and no waiter is left behind.
   */
  @Test
  void aWaitEndsAtThePoolsConnectionTimeoutOrAtAnInterrupt() throws Exception {
    BudgetedDataSource source = new BudgetedDataSource(pool, () -> 1, () -> 1, clock);
    Connection leaked = source.getConnection();
    assertThrows(java.sql.SQLTransientConnectionException.class, source::getConnection);
    assertThrows(java.sql.SQLTransientConnectionException.class,
        () -> withBudget(RequestBudget.of(TimeUnit.HOURS.toNanos(1)), source::getConnection));
    Thread.currentThread().interrupt();
    SQLException interrupted = assertThrows(SQLException.class, source::getConnection);
    assertTrue(Thread.interrupted(), "the interrupt status is kept");
    assertTrue(interrupted.getCause() instanceof InterruptedException);
    assertEquals(0, source.permits().waiters());
    assertEquals(0, source.permits().availablePermits());
    leaked.close();
    assertEquals(1, source.permits().availablePermits());
    source.getConnection().close();
    assertEquals(0, pool.live.get(), "every connection went back to the pool");
  }

  @Test
  void closeReturnsThePermitOnceAlsoWhenThePoolsCloseThrows() throws Exception {
    BudgetedDataSource source = new BudgetedDataSource(pool, 2, clock);
    Connection a = source.getConnection();
    Connection b = source.getConnection();
    assertEquals(0, source.permits().availablePermits());
    a.close();
    a.close(); // a second close: the pool sees it (JDBC makes it a no-op), the permit does not
    assertEquals(1, source.permits().availablePermits());
    assertTrue(a.isClosed());

    pool.failCloses.set(1);
    SQLException failed = assertThrows(SQLException.class, b::close);
    assertEquals("close failed", failed.getMessage(), "the pool's own exception, unwrapped");
    assertEquals(2, source.permits().availablePermits(), "returned although close threw");
    b.close();
    assertEquals(2, source.permits().availablePermits());
  }

  @Test
  void aFailingGetConnectionReturnsThePermit() {
    BudgetedDataSource source = new BudgetedDataSource(pool, 1, clock);
    pool.failGets.set(2);
    assertEquals("pool exhausted",
        assertThrows(SQLException.class, source::getConnection).getMessage());
    assertEquals(1, source.permits().availablePermits());
    assertThrows(SQLException.class, () -> source.getConnection("u", "p"));
    assertEquals(1, source.permits().availablePermits());
  }

  @Test
  void unwrapAndIsWrapperForAnswerForTheWrapperThenThePool() throws Exception {
    BudgetedDataSource source = new BudgetedDataSource(pool, 1, clock);
    assertSame(source, source.unwrap(BudgetedDataSource.class));
    assertSame(pool, source.unwrap(FakePool.class));
    assertTrue(source.isWrapperFor(FakePool.class));
    assertFalse(source.isWrapperFor(String.class));
    assertThrows(SQLException.class, () -> source.unwrap(String.class));
    source.setLoginTimeout(7);
    assertEquals(7, source.getLoginTimeout());
    assertThrows(SQLFeatureNotSupportedException.class, source::createConnectionBuilder);

    try (Connection c = source.getConnection()) {
      assertSame(c, c.unwrap(Connection.class));
      assertEquals("raw connection", c.unwrap(String.class), "delegated");
      assertTrue(c.isWrapperFor(Connection.class));
      assertTrue(c.isWrapperFor(String.class), "delegated");
      assertEquals(c, c);
      UnsupportedOperationException unsupported =
          assertThrows(UnsupportedOperationException.class, c::commit);
      assertEquals("commit", unsupported.getMessage(), "the delegate's exception, unwrapped");
    }
    assertEquals(1, source.permits().availablePermits());
  }

  /**
   * 10,000 seeded random steps on one thread (open, close, close twice, a pool whose get or
   * close throws): after every step the free permits equal the pool size minus the connections
   * the model holds open, and the pool never has more out than permits.
   */
  @Test
  void noPermitLeaksOverRandomOpenCloseAndThrowSequences() throws Exception {
    long seed = WaiterLineTest.seed();
    SplittableRandom random = new SplittableRandom(seed);
    int size = 4;
    BudgetedDataSource source = new BudgetedDataSource(pool, size, clock);
    List<Connection> open = new ArrayList<>();
    for (int step = 0; step < 10_000; step++) {
      int op = random.nextInt(6);
      if (op <= 1 && open.size() < size) {
        if (random.nextInt(5) == 0) {
          pool.failGets.set(1);
          assertThrows(SQLException.class, source::getConnection, "seed " + seed);
        } else {
          RequestBudget budget = RequestBudget.of(random.nextInt(100));
          open.add(withBudget(budget, source::getConnection)); // a free permit: never refused
        }
      } else if (!open.isEmpty()) {
        Connection c = open.remove(random.nextInt(open.size()));
        if (op == 2) {
          pool.failCloses.set(1);
          assertThrows(SQLException.class, c::close, "seed " + seed);
        } else {
          c.close();
        }
        if (op == 3) {
          c.close();
        }
      }
      assertEquals(size - open.size(), source.permits().availablePermits(),
          "step " + step + ", seed " + seed);
      assertEquals(open.size(), pool.live.get(), "step " + step + ", seed " + seed);
    }
    assertTrue(pool.maxLive.get() <= size, "seed " + seed);
  }

  /**
   * The same from six platform and virtual threads with random budgets on a clock that moves on
   * every read, so some requests queue and some are refused: the pool never has more connections
   * out than permits, and at the end every permit is back.
   */
  @Test
  void noPermitLeaksUnderConcurrentOpensClosesRefusalsAndThrows() throws Exception {
    long seed = WaiterLineTest.seed();
    int size = 3;
    AtomicLong ticks = new AtomicLong(Long.MAX_VALUE - 50_000);
    BudgetedDataSource source = new BudgetedDataSource(pool, size, ticks::incrementAndGet);
    int threads = 6;
    int iterations = 2_000;
    AtomicInteger served = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    AtomicInteger failedGets = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CyclicBarrier start = new CyclicBarrier(threads);
    List<Thread> contenders = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      SplittableRandom random = new SplittableRandom(seed + t);
      // daemons: a thread stuck on a leaked permit fails the test at its timeout, not the JVM
      Thread.Builder builder = t % 2 == 0 ? Thread.ofPlatform().daemon() : Thread.ofVirtual();
      contenders.add(builder.start(() -> {
        try {
          start.await();
          for (int i = 0; i < iterations; i++) {
            if (random.nextInt(10) == 0) {
              pool.failGets.incrementAndGet();
            }
            if (random.nextInt(10) == 0) {
              pool.failCloses.incrementAndGet();
            }
            RequestBudget budget = RequestBudget.of(random.nextInt(300));
            Connection c;
            try {
              c = withBudget(budget, source::getConnection);
            } catch (BudgetExceededException e) {
              refused.incrementAndGet();
              continue;
            } catch (SQLException e) {
              failedGets.incrementAndGet();
              continue;
            }
            served.incrementAndGet();
            try {
              c.close();
            } catch (SQLException expected) {
              // the permit is returned anyway
            }
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }));
    }
    for (Thread contender : contenders) {
      contender.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("seed " + seed, failure.get());
    }
    assertEquals(threads * iterations, served.get() + refused.get() + failedGets.get());
    assertTrue(pool.maxLive.get() <= size, "max out " + pool.maxLive.get() + ", seed " + seed);
    assertEquals(0, pool.live.get(), "seed " + seed);
    assertEquals(size, source.permits().availablePermits(), "seed " + seed);
    assertEquals(0, source.permits().waiters(), "seed " + seed);
  }

  @Test
  void aPoolSizeBelowOneIsRejected() {
    assertThrows(IllegalArgumentException.class, () -> new BudgetedDataSource(pool, 0));
    assertInstanceOf(NullPointerException.class,
        assertThrows(NullPointerException.class, () -> new BudgetedDataSource(null, 1)));
  }
}
