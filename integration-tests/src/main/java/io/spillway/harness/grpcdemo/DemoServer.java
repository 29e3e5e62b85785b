package io.spillway.harness.grpcdemo;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.spillway.api.AbstractServerPermit;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The demo's server process: {@link DemoService} on a gRPC (Netty) server, either unprotected or
 * protected exactly as the README's quick start says. Prints {@code port N} once serving and stops
 * when its standard input closes (the harness holds it open), so it never outlives the harness.
 *
 * <pre>
 * DemoServer none|nocontrol|spillway|reject SERVICE_US SLO_MS
 * </pre>
 *
 * <p>{@code nocontrol} is the protected server's code path (install, its workers, the decision on
 * the transport thread) with a scheme that admits everything: the same server with no control,
 * whose throughput is the demo's capacity (docs/design.md, "Measures"). {@code reject} is the
 * same path with a scheme that refuses every call at once (REJECTED_AQM, before the handler): what
 * one refusal costs the serving core (integration-tests/bench/grpc-refusal-cost.sh).
 *
 * <p>Unprotected, the service runs on a fixed pool as large as the processors the process may use,
 * the same parallelism Spillway's default workers have, so the two differ in admission only.
 */
public final class DemoServer {

  private DemoServer() { }

  /** Refuses every call at the gate, as AQM would: the refusal path alone. */
  private static final OverloadScheme REJECT_ALL = new OverloadScheme() {
    @Override
    public String name() {
      return "reject-all";
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      return new ServerGate() {
        @Override
        public ServerPermit admit(RequestMetadata request, long nowNanos) {
          return new AbstractServerPermit(Status.REJECTED_AQM) {
            @Override
            protected void onComplete(Outcome outcome, long now, ResponseMetadata response) { }
          };
        }

        @Override
        public void deregister(long sessionId, long nowNanos) { }
      };
    }

    @Override
    public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
      return NoControl.INSTANCE.newClientGate(environment);
    }
  };

  public static void main(String[] args) throws IOException, InterruptedException {
    if ((args.length != 3 && args.length != 4) || !(args[0].equals("none") || args[0].equals("spillway")
        || args[0].equals("nocontrol") || args[0].equals("nocontrol-pool") || args[0].equals("reject"))) {
      System.err.println("usage: DemoServer none|nocontrol|spillway|reject SERVICE_US SLO_MS [BLOCK_US]");
      System.exit(2);
    }
    long serviceNanos = Long.parseLong(args[1]) * 1_000;
    long sloMillis = Long.parseLong(args[2]);
    long blockNanos = args.length == 4 ? Long.parseLong(args[3]) * 1_000 : 0;
    DemoService service = new DemoService(serviceNanos, blockNanos);
    Server server;
    SpillwayGrpcServer spillway = null;
    ExecutorService pool = null;
    if (args[0].equals("spillway")) {
      // The quick start, as README.md gives it:
      ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(service);
      spillway = SpillwayGrpc.server().slo(Duration.ofMillis(sloMillis)).install(builder);
      server = builder.build().start();
    } else if (args[0].equals("nocontrol-pool")) {
      pool = Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors());
      ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(service);
      spillway = SpillwayGrpc.server(NoControl.INSTANCE).slo(Duration.ofMillis(sloMillis))
          .executor(pool, n -> 0).install(builder);
      server = builder.build().start();
    } else if (args[0].equals("nocontrol") || args[0].equals("reject")) {
      ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(service);
      spillway = SpillwayGrpc.server(args[0].equals("reject") ? REJECT_ALL : NoControl.INSTANCE)
          .slo(Duration.ofMillis(sloMillis)).install(builder);
      server = builder.build().start();
    } else if (blockNanos > 0) {
      // handlers that block: gRPC's default executor, a thread per blocked call, as a team has it
      server = ServerBuilder.forPort(0).addService(service).build().start();
    } else {
      pool = Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors());
      server = ServerBuilder.forPort(0).addService(service).executor(pool).build().start();
    }
    System.out.println("port " + server.getPort());
    System.out.flush();
    // Runs until the harness closes our standard input; "jit" asks for the milliseconds this JVM's
    // compilers have spent so far (-1 if it does not say), for the harness's capacity reading;
    // "cpu" for the nanoseconds of CPU this process has used (-1 if the JVM does not say).
    java.io.BufferedReader in = new java.io.BufferedReader(
        new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.US_ASCII));
    for (String command; (command = in.readLine()) != null; ) {
      if (command.strip().equals("jit")) {
        System.out.println("jit " + io.spillway.harness.SteadyCapacity.ownJitMillis());
        System.out.flush();
      } else if (command.strip().equals("cpu")) {
        System.out.println("cpu " + processCpuNanos());
        System.out.flush();
      }
    }
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    if (spillway != null) {
      spillway.close();
    }
    if (pool != null) {
      pool.shutdownNow();
    }
  }

  /** This process's CPU time so far in nanoseconds, every thread's, or -1 if the JVM does not say. */
  static long processCpuNanos() {
    return java.lang.management.ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os ? os.getProcessCpuTime() : -1;
  }
}
