package io.spillway.harness;

import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.transport.OverloadRejectedException;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.testing.NettyLeaks;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fault tests' client process. Two modes:
 *
 * <ul>
 *   <li>{@code load PORT SESSIONS IN_FLIGHT SERVICE_US}: each session keeps IN_FLIGHT calls of
 *       SERVICE_US outstanding, for ever; prints {@code FAULT-CLIENT running} after 200 answers.
 *       The test kills it with SIGKILL.
 *   <li>{@code connect PORT CONNECTIONS}: one session per connection, each makes one call; prints
 *       {@code FAULT-CLIENT connected N answered A ok M} when all have ended (answered: served,
 *       refused or expired) and keeps the connections open
 *       until its standard input closes.
 * </ul>
 */
public final class FaultClientMain {

  private FaultClientMain() { }

  public static void main(String[] args) throws Exception {
    NettyLeaks.install();
    int port = Integer.parseInt(args[1]);
    BreakwaterConfig config = BreakwaterConfig.forSlo(1_000_000_000L, 50_000);
    if (args[0].equals("load")) {
      load(port, Integer.parseInt(args[2]), Integer.parseInt(args[3]), Long.parseLong(args[4]) * 1_000,
          config);
    } else {
      connect(port, Integer.parseInt(args[2]), config);
    }
  }

  private static byte[] payload(long serviceNanos) {
    return ByteBuffer.allocate(8).putLong(serviceNanos).array();
  }

  private static void load(int port, int sessions, int inFlight, long serviceNanos,
      BreakwaterConfig config) throws Exception {
    SpillwayClient client = SpillwayClient.builder().scheme(Breakwater.of(config)).port(port)
        .connections(2).sessions(sessions).sloNanos(config.clientQueueTimeoutNanos()).build().start();
    AtomicLong answered = new AtomicLong();
    byte[] payload = payload(serviceNanos);
    for (int s = 0; s < sessions; s++) {
      SpillwayClient.Session session = client.session(s);
      for (int i = 0; i < inFlight; i++) {
        keepCalling(session, payload, answered);
      }
    }
    while (answered.get() < 200) {
      Thread.onSpinWait();
    }
    System.out.println("FAULT-CLIENT running");
    System.out.flush();
    Thread.currentThread().join(); // until killed
  }

  private static void keepCalling(SpillwayClient.Session session, byte[] payload, AtomicLong answered) {
    CompletableFuture<byte[]> call = session.call(payload);
    call.whenComplete((r, e) -> {
      answered.incrementAndGet();
      keepCalling(session, payload, answered);
    });
  }

  private static void connect(int port, int connections, BreakwaterConfig config) throws Exception {
    try (SpillwayClient client = SpillwayClient.builder().scheme(Breakwater.of(config)).port(port)
        .connections(connections).sessions(connections).ioThreads(1)
        .sloNanos(config.clientQueueTimeoutNanos()).build().start()) {
      CompletableFuture<?>[] calls = new CompletableFuture<?>[connections];
      byte[] payload = payload(0);
      for (int s = 0; s < connections; s++) {
        calls[s] = client.session(s).call(payload);
      }
      int ok = 0;
      int answered = 0;
      for (CompletableFuture<?> c : calls) {
        try {
          c.join();
          ok++;
          answered++;
        } catch (java.util.concurrent.CompletionException e) {
          if (e.getCause() instanceof OverloadRejectedException) {
            answered++; // refused by the server or expired in the client queue: an answer
          }
        }
      }
      System.out.println("FAULT-CLIENT connected " + connections + " answered " + answered + " ok " + ok);
      System.out.flush();
      while (System.in.read() >= 0) {
        // until the test closes our standard input
      }
    }
  }
}
