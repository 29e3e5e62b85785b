package io.spillway.examples.spring.statements;

import java.util.concurrent.atomic.AtomicLong;
import org.springframework.context.annotation.Profile;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /statements[?customer=N]}: a customer's monthly statement ({@link StatementService}).
 * Without {@code customer} the customers are taken in turn (what a load tool that repeats one URL
 * gets). Nothing here knows about overload: the Spillway starter decides before this runs, and a
 * budget refusal at the connection pool becomes a fast reject ({@code 429}). Thread-safe.
 */
@RestController
@Profile("statements")
class StatementController {

  private final StatementService statements;
  private final AtomicLong nextCustomer = new AtomicLong(1);

  StatementController(StatementService statements) {
    this.statements = statements;
  }

  @GetMapping("/statements")
  StatementService.Statement statement(
      @RequestParam(name = "customer", required = false) Long customer) {
    return statements.statement(customer != null ? customer : nextCustomer.getAndIncrement());
  }
}
