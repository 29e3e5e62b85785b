package io.spillway.examples.spring;

import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * An inventory service as a Spring team writes it: Spring MVC on Tomcat ({@code POST
 * /reservations}) and Spring gRPC ({@code Inventory/Reserve}, its own port) over one service layer
 * ({@link InventoryService}) that serializes its ledger on a {@code BudgetedLock}. Its protection
 * is the {@code spillway-spring-boot-starter} dependency with the starter's default properties;
 * {@code ./spillway spring-demo} passes only {@code spillway.slo}, the SLO of this workload.
 *
 * <p>Profiles select what {@code ./spillway spring-demo} compares (docs/results/spring.md): none
 * (the default: Spillway), {@code none} ({@code spillway.enabled=false}: no protection), {@code
 * resilience4j} and {@code concurrency-limits} (Spillway off, the peer's servlet filter in front
 * of {@code /reservations}; see the {@code peers} package).
 *
 * <p>Profile {@code statements}, beside any of those, adds {@code GET /statements}: a pool-bound
 * endpoint over PostgreSQL through Boot's HikariCP pool ({@code statements} package).
 *
 * <p>On start it prints one line, {@code inventory ready ...}, with its calibrated cost (or the
 * rounds it was given, {@code inventory.rounds}).
 */
@SpringBootApplication
public class InventoryApplication {

  public static void main(String[] args) {
    SpringApplication.run(InventoryApplication.class, args);
  }

  @Bean
  CommandLineRunner announceCost(InventoryService inventory) {
    return args -> {
      int[] rounds = inventory.rounds();
      if (Double.isNaN(inventory.nanosPerRound())) {
        System.out.printf(java.util.Locale.ROOT, "inventory ready: %d + %d hash rounds per "
            + "reservation (outside + inside the lock), given%n", rounds[0], rounds[1]);
        return;
      }
      System.out.printf(java.util.Locale.ROOT, "inventory ready: %d + %d hash rounds per "
          + "reservation (outside + inside the lock), %.2f ns per round: %.0f us of CPU%n",
          rounds[0], rounds[1], inventory.nanosPerRound(),
          (rounds[0] + rounds[1]) * inventory.nanosPerRound() / 1e3);
    };
  }
}
