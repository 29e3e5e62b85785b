package io.spillway.examples.spring;

import java.util.concurrent.atomic.AtomicLong;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The REST endpoint: {@code POST /reservations[?sku=N]} reserves one unit and answers the units
 * left. Without {@code sku} the SKUs are taken in turn (what a load tool that repeats one URL
 * gets). Nothing here knows about overload: the Spillway starter's filter decides before this
 * runs, and turns a budget abort in the service layer into a fast reject ({@code 429}).
 * Thread-safe.
 */
@RestController
class ReservationController {

  private final InventoryService inventory;
  private final AtomicLong nextSku = new AtomicLong();

  ReservationController(InventoryService inventory) {
    this.inventory = inventory;
  }

  @PostMapping("/reservations")
  InventoryService.Reservation reserve(@RequestParam(name = "sku", required = false) Long sku) {
    return inventory.reserve(sku != null ? sku : nextSku.getAndIncrement());
  }
}
