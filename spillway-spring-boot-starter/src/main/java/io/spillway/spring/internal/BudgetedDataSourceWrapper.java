package io.spillway.spring.internal;

import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedDataSource;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.util.function.IntSupplier;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.Advisor;
import org.springframework.aop.framework.Advised;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;

/**
 * Puts a {@link BudgetedDataSource} sized to the pool ({@code HikariConfigMXBean#getMaximumPoolSize})
 * in front of every {@link DataSource} bean that is a HikariCP pool, so a request whose budget the
 * pool's queue would outlast is refused at once (spillway.reject-status) instead of waiting up to Hikari's {@code
 * connectionTimeout} for a connection: Protego's ASQM at the pool's wait queue (protego-nsdi23
 * §3.2). Any other DataSource is left as it is, and the log says why once per bean: without the
 * pool's size, a semaphore in front of it could admit more waiters than it has connections
 * (requests then queue inside the pool, unseen) or fewer (a needless bulkhead).
 *
 * <p>The bean keeps its class: it becomes a class-based proxy of the pool (Spring AOP, as Spring's
 * own scoped and transactional proxies are) whose {@code getConnection} goes through the budgeted
 * wrapper and whose every other method goes to the pool itself. Code that injects the concrete
 * {@code HikariDataSource}, and Spring Boot's pool metrics and health checks, see the pool as
 * before; a bean of another type would fail their injection and start-up with it. {@code
 * unwrap(BudgetedDataSource.class)} returns the wrapper. HikariCP has no final public methods, so
 * none escapes the proxy to run on its empty fields.
 *
 * <p>Hikari is read by reflection, so the starter needs no dependency on it. The size is read
 * again on each {@code getConnection}, so a pool resized through its MXBean at run time is
 * followed ({@link BudgetedDataSource#BudgetedDataSource(DataSource, java.util.function.IntSupplier,
 * Ticker)}). Disable with {@code spillway.jdbc.enabled=false}.
 *
 * <p>Thread-safety: called by the bean factory during start-up; stateless apart from the lazily
 * resolved clock. The proxies it makes are as thread-safe as the pool.
 */
public final class BudgetedDataSourceWrapper implements BeanPostProcessor {

  private static final System.Logger LOG =
      System.getLogger(BudgetedDataSourceWrapper.class.getName());
  private static final String HIKARI_MX_BEAN = "com.zaxxer.hikari.HikariConfigMXBean";

  private final ObjectProvider<Ticker> ticker;

  /** {@code ticker}: the clock the requests' budgets are measured with, resolved when needed. */
  public BudgetedDataSourceWrapper(ObjectProvider<Ticker> ticker) {
    this.ticker = ticker;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (!(bean instanceof DataSource dataSource) || bean instanceof BudgetedDataSource
        || isBudgeted(bean)) {
      return bean;
    }
    IntSupplier poolSize = hikariPoolSize(bean);
    if (poolSize == null || poolSize.getAsInt() < 1) {
      LOG.log(System.Logger.Level.INFO, "Spillway: DataSource bean ''{0}'' ({1}) is not wrapped "
          + "in a BudgetedDataSource: it is not a HikariCP pool, so its size is unknown",
          beanName, bean.getClass().getName());
      return bean;
    }
    BudgetedDataSource budgeted = new BudgetedDataSource(dataSource, poolSize,
        hikariConnectionTimeout(bean), ticker.getIfAvailable(Ticker::system));
    ProxyFactory proxy = new ProxyFactory(bean);
    proxy.setProxyTargetClass(true);
    proxy.addAdvice(new BudgetedConnections(budgeted));
    return proxy.getProxy(bean.getClass().getClassLoader());
  }

  /** Whether {@code bean} is already a proxy this post-processor made. */
  private static boolean isBudgeted(Object bean) {
    if (bean instanceof Advised advised) {
      for (Advisor advisor : advised.getAdvisors()) {
        if (advisor.getAdvice() instanceof BudgetedConnections) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Routes the pool's {@code getConnection} calls through {@link BudgetedDataSource}, and answers
   * {@code unwrap}/{@code isWrapperFor} for it; everything else proceeds to the pool.
   */
  static final class BudgetedConnections implements MethodInterceptor {
    private final BudgetedDataSource budgeted;

    BudgetedConnections(BudgetedDataSource budgeted) {
      this.budgeted = budgeted;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
      Method method = invocation.getMethod();
      Object[] args = invocation.getArguments();
      switch (method.getName()) {
        case "getConnection" -> {
          if (args.length == 0) {
            return budgeted.getConnection();
          }
          if (args.length == 2) {
            return budgeted.getConnection((String) args[0], (String) args[1]);
          }
        }
        case "unwrap" -> {
          if (args.length == 1 && args[0] == BudgetedDataSource.class) {
            return budgeted;
          }
        }
        case "isWrapperFor" -> {
          if (args.length == 1 && args[0] == BudgetedDataSource.class) {
            return true;
          }
        }
        default -> { }
      }
      return invocation.proceed();
    }
  }

  /**
   * The pool's {@code connectionTimeout}, ms, read anew on each call, for a HikariCP pool (the
   * wrapper's permits stand in for its connections, so a caller waits for a permit as long as it
   * would have waited in the pool); HikariCP's default where it cannot be read.
   */
  static java.util.function.LongSupplier hikariConnectionTimeout(Object bean) {
    for (Class<?> c = bean.getClass(); c != null; c = c.getSuperclass()) {
      for (Class<?> i : c.getInterfaces()) {
        if (i.getName().equals(HIKARI_MX_BEAN)) {
          try {
            MethodHandle timeout = MethodHandles.publicLookup().findVirtual(i,
                "getConnectionTimeout", MethodType.methodType(long.class)).bindTo(bean);
            return () -> {
              try {
                return (long) timeout.invokeExact();
              } catch (Throwable e) {
                return BudgetedDataSource.DEFAULT_CONNECTION_TIMEOUT_MILLIS;
              }
            };
          } catch (ReflectiveOperationException | RuntimeException e) {
            return () -> BudgetedDataSource.DEFAULT_CONNECTION_TIMEOUT_MILLIS;
          }
        }
      }
    }
    return () -> BudgetedDataSource.DEFAULT_CONNECTION_TIMEOUT_MILLIS;
  }

  /**
   * The pool's maximum size, read anew on each call, if {@code bean} is a HikariCP pool; else
   * {@code null}. A reading that fails is -1 (the wrapper then keeps its count).
   */
  static IntSupplier hikariPoolSize(Object bean) {
    for (Class<?> c = bean.getClass(); c != null; c = c.getSuperclass()) {
      for (Class<?> i : c.getInterfaces()) {
        if (i.getName().equals(HIKARI_MX_BEAN)) {
          MethodHandle size;
          try {
            size = MethodHandles.publicLookup().findVirtual(i, "getMaximumPoolSize",
                MethodType.methodType(int.class)).bindTo(bean);
          } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, "Spillway: cannot read the HikariCP pool size", e);
            return null;
          }
          return () -> {
            try {
              return (int) size.invokeExact();
            } catch (Throwable e) {
              return -1;
            }
          };
        }
      }
    }
    return null;
  }
}
