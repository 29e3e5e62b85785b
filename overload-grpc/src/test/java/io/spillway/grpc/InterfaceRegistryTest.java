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

  /**
   * Method names a peer chooses (a server whose fallback registry serves any method, a proxy)
   * must not grow the registry without bound: past its capacity, new names share the default
   * interface, and the names it has keep their ids.
   */
  @Test
  void namesBeyondTheCapacityShareTheDefaultInterface() {
    InterfaceRegistry registry = new InterfaceRegistry();
    int peerNames = 5_000;
    for (int i = 0; i < peerNames; i++) {
      registry.idOf("peer.S/M" + i);
    }
    assertEquals(InterfaceRegistry.DEFAULT_CAPACITY, registry.size(),
        peerNames + " names seen; the registry holds at most its capacity");
    assertEquals(1, registry.idOf("peer.S/M0"), "names it has keep their ids");
    assertEquals(InterfaceRegistry.DEFAULT_INTERFACE, registry.idOf("peer.S/M" + (peerNames - 1)));
    assertEquals(-1, registry.find("peer.S/M" + (peerNames - 1)));
    assertNull(registry.nameOf(InterfaceRegistry.DEFAULT_INTERFACE));
  }

  /** The same through an installed server that answers any method name its clients choose. */
  @Test
  void aServerAnsweringAnyMethodKeepsItsRegistryBounded() throws Exception {
    io.grpc.HandlerRegistry anyMethod = new io.grpc.HandlerRegistry() {
      @Override
      public io.grpc.ServerMethodDefinition<?, ?> lookupMethod(String name, String authority) {
        return io.grpc.ServerMethodDefinition.create(method(name),
            io.grpc.stub.ServerCalls.asyncUnaryCall((String request, io.grpc.stub.StreamObserver<String> out) -> {
              out.onNext("ok");
              out.onCompleted();
            }));
      }
    };
    String name = io.grpc.inprocess.InProcessServerBuilder.generateName();
    io.grpc.inprocess.InProcessServerBuilder builder =
        io.grpc.inprocess.InProcessServerBuilder.forName(name).fallbackHandlerRegistry(anyMethod);
    io.spillway.api.testing.VirtualClock clock = new io.spillway.api.testing.VirtualClock();
    SpillwayGrpcServer spillway = SpillwayGrpc.server().sloMillis(5).ticker(clock).scheduler(clock)
        .parallelism(2).install(builder);
    io.grpc.Server server = builder.build().start();
    io.grpc.ManagedChannel channel = io.grpc.inprocess.InProcessChannelBuilder.forName(name).build();
    try {
      int names = InterfaceRegistry.DEFAULT_CAPACITY + 500;
      int ok = 0;
      for (int i = 0; i < names; i++) {
        Calls.Reply reply = Calls.unary(channel, method("peer.S/M" + i), "x").await();
        ok += reply.status().isOk() ? 1 : 0;
      }
      assertEquals(names, ok, "every call served");
      assertEquals(InterfaceRegistry.DEFAULT_CAPACITY, spillway.interceptor().interfaces().size(),
          names + " method names called");
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }

  private static io.grpc.MethodDescriptor<String, String> method(String fullName) {
    return io.grpc.MethodDescriptor.<String, String>newBuilder()
        .setType(io.grpc.MethodDescriptor.MethodType.UNARY).setFullMethodName(fullName)
        .setRequestMarshaller(Echo.STRING).setResponseMarshaller(Echo.STRING).build();
  }

  private static void await(CyclicBarrier barrier) {
    try {
      barrier.await(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
