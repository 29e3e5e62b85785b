package io.spillway.grpc;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A measurement, not a test (docs/results/grpc.md, "Plain clients whose handlers block"): how many
 * plain calls of a burst a freshly installed default-scheme server admits when its handlers block.
 * Three fresh servers (SLO 100 ms, real clock, loopback); each gets ten bursts of 40 unary calls,
 * 50 ms apart, whose handlers sleep 20 ms. Prints the calls admitted of each burst, and those
 * refused by AQM. It asserts nothing and reads the wall clock, so it runs only when asked:
 *
 * <pre>./mvnw -B -o test -pl overload-grpc -Dtest=BlockingBurstProbe -Dspillway.probe=true</pre>
 */
class BlockingBurstProbe {

  @Test
  void burstsOfBlockingCalls() throws Exception {
    assumeTrue(Boolean.getBoolean("spillway.probe"), "a measurement: -Dspillway.probe=true");
    for (int server = 0; server < 3; server++) {
      System.out.println("server " + server + ", admitted of 40 per burst:" + bursts());
    }
  }

  private static String bursts() throws Exception {
    Echo.Handler blocking = (method, request, out) -> {
      try {
        Thread.sleep(20); // a downstream call, say
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      out.onNext("done:" + request);
      out.onCompleted();
    };
    ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(Echo.service(blocking));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(100)).install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = ManagedChannelBuilder.forAddress("localhost", server.getPort())
        .usePlaintext().build();
    StringBuilder line = new StringBuilder();
    try {
      for (int burst = 0; burst < 10; burst++) {
        List<Calls.Handle> calls = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
          calls.add(Calls.unary(channel, Echo.UNARY, "b" + burst + "c" + i));
        }
        int ok = 0;
        int aqm = 0;
        for (Calls.Handle h : calls) {
          Calls.Reply r = h.await();
          if (r.status().getCode() == Status.Code.OK) {
            ok++;
          } else if (String.valueOf(r.status().getDescription()).contains("aqm")) {
            aqm++;
          }
        }
        line.append(' ').append(ok).append(aqm > 0 ? " (aqm " + aqm + ")" : "");
        Thread.sleep(50);
      }
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
    return line.toString();
  }
}
