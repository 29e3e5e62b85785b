package io.spillway.harness;

import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.testing.NettyLeaks;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;

/**
 * The fault tests' server process: Breakwater behind a {@link LeakCheckingScheme}, the harness's
 * spin service on virtual threads. Prints {@code FAULT-PORT n} once listening. On the standard
 * input line {@code stats} it prints {@code FAULT-STATS} with the gate's ledger, the heap used after
 * a full collection, and the Netty leak reports; when its standard input closes it stops.
 *
 * <p>Usage: {@code FaultServerMain PORT SLO_US}
 */
public final class FaultServerMain {

  private FaultServerMain() { }

  public static void main(String[] args) throws Exception {
    NettyLeaks.install();
    int port = Integer.parseInt(args[0]);
    long sloNanos = Long.parseLong(args[1]) * 1_000;
    LeakCheckingScheme scheme = new LeakCheckingScheme(
        Breakwater.of(BreakwaterConfig.forSlo(sloNanos, 50_000)));
    try (SpillwayServer server = SpillwayServer.builder().port(port).scheme(scheme).parallelism(1)
        .handler(HarnessServer::spin).build().start()) {
      System.out.println("FAULT-PORT " + server.port());
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.strip().equals("stats")) {
          NettyLeaks.collect();
          long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
          String leaks = scheme.checker().outstanding() == 0 ? "none" : "open";
          try {
            scheme.checker().assertNoLeaks();
          } catch (AssertionError e) {
            leaks = e.getMessage().replace('\n', ' ');
          }
          System.out.println("FAULT-STATS " + scheme.ledger() + " heap=" + heap + " netty="
              + NettyLeaks.reports().size() + " permits=" + leaks.replace(' ', '_'));
          System.out.flush();
        }
      }
    }
  }
}
