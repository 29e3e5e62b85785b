package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import com.zaxxer.hikari.HikariDataSource;
import io.spillway.spring.jdbc.JdbcTestApp;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** {@code spillway.jdbc.enabled=false}: the pool bean is left as the application made it. */
@SpringBootTest(classes = JdbcTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.NONE,
    properties = "spillway.jdbc.enabled=false")
class BudgetedDataSourceWrappingDisabledTest {

  @Autowired
  DataSource dataSource;

  @Test
  void thePoolIsNotWrapped() {
    assertInstanceOf(HikariDataSource.class, dataSource);
  }
}
