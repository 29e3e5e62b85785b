package io.spillway.harness;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.sim.Scenario;
import io.spillway.sim.SchemeRegistry;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.Threading;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The harness's server process: a {@link SpillwayServer} running one scheme over a synthetic
 * service that spins for the service time each request carries (8 bytes, nanoseconds), the way
 * the papers' synthetic workloads model a CPU-bound request. Requests are dispatched to virtual
 * threads on the Loom carrier-delay dispatcher, whose queue is a stage of the overload signal.
 *
 * <p>Prints {@code SPILLWAY-PORT n} on stdout once listening, then serves until its standard input
 * closes (so it never outlives the harness).
 *
 * <p>Usage: {@code HarnessServer SCENARIO_FILE SCHEME CARRIERS [key=value ...]}
 */
public final class HarnessServer {

  static final String PORT_LINE = "SPILLWAY-PORT ";

  private HarnessServer() { }

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: HarnessServer SCENARIO_FILE SCHEME CARRIERS [key=value ...]");
      System.exit(2);
    }
    Map<String, String> overrides = new LinkedHashMap<>();
    for (int i = 3; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      overrides.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Scenario scenario = Scenario.load(Path.of(args[0]), overrides);
    OverloadScheme scheme = SchemeRegistry.create(args[1], scenario);
    int carriers = Integer.parseInt(args[2]);
    Ticker ticker = Ticker.system();
    boolean inline = scenario.threading().equals("inline");
    try (CarrierDispatcher dispatcher = CarrierDispatcher.create(carriers, ticker);
         SpillwayServer server = (inline
             ? SpillwayServer.builder().threading(Threading.LOOP_QUEUE)
             : SpillwayServer.builder().dispatcher(dispatcher, dispatcher.queueDelay()))
             .scheme(scheme)
             .parallelism(carriers)
             .handler(HarnessServer::spin)
             .build()
             .start()) {
      System.err.println("harness server: scheme " + scheme.name() + ", transport " + server.transport()
          + ", threading " + scenario.threading() + (inline ? "" : ", " + dispatcher));
      System.out.println(PORT_LINE + server.port());
      System.out.flush();
      while (System.in.read() >= 0) {
        // serve until the harness closes our stdin
      }
    }
  }

  /** The synthetic service: spin for the requested time on the carrier. */
  static ByteBuf spin(ByteBuf request, io.netty.buffer.ByteBufAllocator alloc) {
    long nanos = request.readableBytes() >= 8 ? request.getLong(request.readerIndex()) : 0;
    long end = System.nanoTime() + nanos;
    while (System.nanoTime() - end < 0) {
      Thread.onSpinWait();
    }
    return Unpooled.EMPTY_BUFFER;
  }
}
