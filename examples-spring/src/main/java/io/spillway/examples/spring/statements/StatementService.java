package io.spillway.examples.spring.statements;

import java.sql.Timestamp;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Profile;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;

/**
 * A customer's monthly statement, read from a {@code statement_orders} table through Spring Boot's
 * JDBC starter: the request path of a service whose bottleneck is its database, not its own CPU.
 * Each statement is one aggregate query over the customer's orders (about 500 rows reached through
 * an index on {@code customer_id}), about 1 ms of the database's CPU; the connection is held for
 * the query, so under load requests queue for one of the pool's connections (HikariCP's 10 by
 * default), where a queue on the server's own threads or CPU does not show them. The Spillway
 * starter budgets that wait ({@code BudgetedDataSource}, docs/results/spring.md "A pool-bound
 * service"); this class knows nothing of it.
 *
 * <p>On start it creates the table and, unless it already holds {@code statements.orders} rows,
 * empties and fills it (a table of this example's own, so no other data is touched) with that
 * many orders spread over {@code statements.customers} customers and the last two years, from a
 * fixed seed, so every process of a comparison reads the same data. The SQL is portable
 * (PostgreSQL, and H2 in the tests).
 *
 * <p>Thread-safe.
 */
@Service
@Profile("statements")
public class StatementService {

  /** One month of a statement. */
  public record Month(int year, int month, long orders, long cents) { }

  /** A customer's statement: one entry per month with orders, oldest first. */
  public record Statement(int customer, List<Month> months) { }

  private static final long SEED = 42;
  private static final int BATCH = 10_000;
  private static final String QUERY = "select extract(year from placed_at), "
      + "extract(month from placed_at), count(*), sum(amount_cents) from statement_orders "
      + "where customer_id = ? group by extract(year from placed_at), "
      + "extract(month from placed_at) order by 1, 2";

  private final JdbcTemplate jdbc;
  private final int customers;

  /**
   * @param customers customers the orders are spread over, numbered from 1
   * @param orders rows the table is filled with
   */
  public StatementService(JdbcTemplate jdbc,
      @Value("${statements.customers:2000}") int customers,
      @Value("${statements.orders:1000000}") int orders) {
    if (customers < 1 || orders < 0) {
      throw new IllegalArgumentException("statements.customers must be at least 1 and "
          + "statements.orders at least 0: " + customers + ", " + orders);
    }
    this.jdbc = jdbc;
    this.customers = customers;
    long started = System.nanoTime();
    boolean seeded = seed(orders);
    System.out.printf(Locale.ROOT, "statements ready: %d orders of %d customers (%s)%n", orders,
        customers, seeded ? String.format(Locale.ROOT, "written in %.1f s",
            (System.nanoTime() - started) / 1e9) : "already there");
  }

  /** The statement of {@code customer} (any int: taken modulo the customers, from 1). */
  public Statement statement(long customer) {
    int id = (int) Math.floorMod(customer - 1, (long) customers) + 1;
    List<Month> months = jdbc.query(QUERY, (rs, row) -> new Month(rs.getInt(1), rs.getInt(2),
        rs.getLong(3), rs.getLong(4)), id);
    return new Statement(id, months);
  }

  /** Creates and fills the table unless it holds {@code orders} rows; whether it wrote them. */
  private boolean seed(int orders) {
    jdbc.execute("create table if not exists statement_orders (id bigint primary key, customer_id "
        + "int not null, placed_at timestamp not null, amount_cents int not null)");
    Long present = jdbc.queryForObject("select count(*) from statement_orders", Long.class);
    if (present != null && present == orders) {
      return false;
    }
    jdbc.execute("delete from statement_orders");
    SplittableRandom random = new SplittableRandom(SEED);
    LocalDateTime now = LocalDateTime.of(2026, 11, 30, 0, 0);
    long twoYears = 730L * 24 * 3600;
    List<Object[]> batch = new ArrayList<>(BATCH);
    for (int id = 1; id <= orders; id++) {
      batch.add(new Object[] {id, 1 + random.nextInt(customers),
          Timestamp.valueOf(now.minusSeconds(random.nextLong(twoYears))),
          random.nextInt(20_000)});
      if (batch.size() == BATCH || id == orders) {
        jdbc.batchUpdate("insert into statement_orders (id, customer_id, placed_at, amount_cents) "
            + "values (?, ?, ?, ?)", batch);
        batch.clear();
      }
    }
    jdbc.execute("create index if not exists statement_orders_customer "
        + "on statement_orders (customer_id)");
    String product = jdbc.execute(
        (java.sql.Connection c) -> c.getMetaData().getDatabaseProductName());
    if ("PostgreSQL".equals(product)) {
      // the planner's statistics, so that the index is used from the first query
      jdbc.execute("analyze statement_orders");
    }
    return true;
  }
}
