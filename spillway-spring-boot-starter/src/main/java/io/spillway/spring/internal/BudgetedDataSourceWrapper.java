package io.spillway.spring.internal;

import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedDataSource;
import java.lang.reflect.Method;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;

/**
 * Wraps every {@link DataSource} bean that is a HikariCP pool in a {@link BudgetedDataSource}
 * sized to the pool ({@code HikariConfigMXBean#getMaximumPoolSize}), so a request whose budget
 * the pool's queue would outlast is refused at once (503) instead of waiting up to Hikari's
 * {@code connectionTimeout} for a connection: Protego's ASQM at the pool's wait queue
 * (protego-nsdi23 §3.2). Any other DataSource is left as it is, and the log says why once per
 * bean: without the pool's size, a semaphore in front of it could admit more waiters than it has
 * connections (requests then queue inside the pool, unseen) or fewer (a needless bulkhead).
 *
 * <p>Hikari is read by reflection, so the starter needs no dependency on it. The size is read
 * once, when the bean is initialised; a pool resized later through its MXBean keeps the wrapper's
 * first size. The wrapped bean's type is {@code BudgetedDataSource}: code that injects the
 * concrete {@code HikariDataSource} must {@code unwrap(HikariDataSource.class)} instead, as Spring
 * Boot's own pool metadata does. Disable with {@code spillway.jdbc.enabled=false}.
 *
 * <p>Thread-safety: called by the bean factory during start-up; stateless apart from the lazily
 * resolved clock.
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
    if (!(bean instanceof DataSource dataSource) || bean instanceof BudgetedDataSource) {
      return bean;
    }
    int poolSize = hikariPoolSize(bean);
    if (poolSize < 1) {
      LOG.log(System.Logger.Level.INFO, "Spillway: DataSource bean ''{0}'' ({1}) is not wrapped "
          + "in a BudgetedDataSource: it is not a HikariCP pool, so its size is unknown",
          beanName, bean.getClass().getName());
      return bean;
    }
    return new BudgetedDataSource(dataSource, poolSize, ticker.getIfAvailable(Ticker::system));
  }

  /** The pool's maximum size if {@code bean} is a HikariCP pool, else -1. */
  static int hikariPoolSize(Object bean) {
    for (Class<?> c = bean.getClass(); c != null; c = c.getSuperclass()) {
      for (Class<?> i : c.getInterfaces()) {
        if (i.getName().equals(HIKARI_MX_BEAN)) {
          try {
            Method size = i.getMethod("getMaximumPoolSize");
            return (Integer) size.invoke(bean);
          } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, "Spillway: cannot read the HikariCP pool size", e);
            return -1;
          }
        }
      }
    }
    return -1;
  }
}
