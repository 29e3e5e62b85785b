package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TransportTest {

  @Test
  void selectsTheFirstAvailableInOrder() {
    Transport t = Transport.select(null);
    for (Transport earlier : Transport.values()) {
      if (earlier == t) {
        break;
      }
      assertNotNull(earlier.unavailabilityCause(), earlier + " was available but skipped");
    }
    assertTrue(t.isAvailable());
  }

  @Test
  void nioIsAlwaysAvailableAndCanBeForced() {
    assertEquals(Transport.NIO, Transport.select("nio"));
    assertEquals(Transport.EPOLL, Transport.byId("EPOLL"));
  }

  @Test
  void anUnknownForcedTransportIsAClearError() {
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> Transport.select("dpdk"));
    assertTrue(e.getMessage().contains("dpdk") && e.getMessage().contains(Transport.PROPERTY), e.getMessage());
  }

  @Test
  void aForcedUnavailableTransportNamesTheCause() {
    for (Transport t : Transport.values()) {
      if (!t.isAvailable()) {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Transport.select(t.id()));
        assertTrue(e.getMessage().contains("not available"), e.getMessage());
      } else {
        assertEquals(t, Transport.select(t.id()));
      }
    }
  }
}
