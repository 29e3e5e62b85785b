package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class InterfaceRegistryTest {

  @Test
  void idsAreDenseFromOneAndStable() {
    InterfaceRegistry registry = new InterfaceRegistry();
    assertEquals(1, registry.idOf("a.S/X"));
    assertEquals(2, registry.idOf("a.S/Y"));
    assertEquals(1, registry.idOf("a.S/X"));
    assertEquals("a.S/Y", registry.nameOf(2));
    assertNull(registry.nameOf(InterfaceRegistry.DEFAULT_INTERFACE));
    assertNull(registry.nameOf(3));
    assertEquals(2, registry.size());
    assertEquals(2, registry.find("a.S/Y"));
    assertEquals(-1, registry.find("a.S/Z"), "find never assigns");
    assertEquals(2, registry.size());
  }

  @Test
  void preRegisteredServicesGetIdsInDeclarationOrder() {
    InterfaceRegistry registry = InterfaceRegistry.of(Echo.DESCRIPTOR);
    assertEquals(3, registry.size());
    for (int id = 1; id <= 3; id++) {
      assertEquals(id, registry.idOf(registry.nameOf(id)));
    }
    assertEquals(registry.idOf(Echo.UNARY), registry.idOf("test.Echo/Unary"));
  }

  @Test
  void racingThreadsAgreeOnOneIdPerName() throws Exception {
    InterfaceRegistry registry = new InterfaceRegistry();
    int threads = 4;
    int names = 200;
    CyclicBarrier start = new CyclicBarrier(threads);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<CompletableFuture<int[]>> results = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int offset = t * 37;
        results.add(CompletableFuture.supplyAsync(() -> {
          await(start);
          int[] ids = new int[names];
          for (int i = 0; i < names; i++) {
            int n = (i + offset) % names;
            ids[n] = registry.idOf("svc/M" + n);
          }
          return ids;
        }, pool));
      }
      int[] first = results.get(0).get(10, TimeUnit.SECONDS);
      for (CompletableFuture<int[]> result : results) {
        int[] ids = result.get(10, TimeUnit.SECONDS);
        for (int i = 0; i < names; i++) {
          assertEquals(first[i], ids[i], "svc/M" + i);
        }
      }
      Set<Integer> distinct = new HashSet<>();
      for (int id : first) {
        distinct.add(id);
      }
      assertEquals(names, distinct.size());
      assertEquals(names, registry.size());
      for (int i = 0; i < names; i++) {
        assertEquals("svc/M" + i, registry.nameOf(first[i]));
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static void await(CyclicBarrier barrier) {
    try {
      barrier.await(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
