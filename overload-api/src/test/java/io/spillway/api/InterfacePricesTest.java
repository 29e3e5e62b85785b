package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class InterfacePricesTest {

  @Test
  void holdsACopyOfItsPairs() {
    int[] ids = {3, 1};
    long[] prices = {40, 0};
    InterfacePrices list = InterfacePrices.of(ids, prices);
    ids[0] = 9;
    prices[0] = 9;
    assertEquals(2, list.size());
    assertEquals(3, list.interfaceId(0));
    assertEquals(40, list.price(0));
    assertEquals(1, list.interfaceId(1));
    assertEquals("InterfacePrices[3=40, 1=0]", list.toString());
    assertEquals(InterfacePrices.of(new int[] {3, 1}, new long[] {40, 0}), list);
    assertNotEquals(InterfacePrices.of(new int[] {1, 3}, new long[] {0, 40}), list, "order counts");
    assertSame(InterfacePrices.NONE, InterfacePrices.of(new int[0], new long[0]));
    assertTrue(InterfacePrices.NONE.isEmpty());
  }

  @Test
  void refusesMismatchedOrNegativeInput() {
    assertThrows(IllegalArgumentException.class,
        () -> InterfacePrices.of(new int[] {1}, new long[] {1, 2}));
    assertThrows(IllegalArgumentException.class,
        () -> InterfacePrices.of(new int[] {-1}, new long[] {1}));
    assertThrows(IllegalArgumentException.class,
        () -> InterfacePrices.of(new int[] {1}, new long[] {-1}));
    assertThrows(NullPointerException.class, () -> InterfacePrices.of(null, new long[0]));
  }

  @Test
  void aResponseCarriesNoneUntilSetAndAfterReset() {
    ResponseMetadata response = new ResponseMetadata();
    assertSame(InterfacePrices.NONE, response.interfacePrices());
    InterfacePrices list = InterfacePrices.of(new int[] {2}, new long[] {7});
    response.interfacePrices(list);
    assertSame(list, response.interfacePrices());
    assertTrue(response.toString().contains("interfacePrices=InterfacePrices[2=7]"), response.toString());
    assertSame(InterfacePrices.NONE, response.reset().interfacePrices());
    assertThrows(NullPointerException.class, () -> response.interfacePrices(null));
  }
}
