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
 * plain calls of a burst a freshly installed default-scheme server admits when its handlers block,
 * and, for the other side of the same default, when they compute. Three fresh servers of each
 * (SLO 100 ms, real clock, loopback). Blocking: ten bursts of 40 unary calls, 50 ms apart, whose
 * handlers sleep 20 ms; prints the calls admitted of each burst, and those refused by AQM.
 * Computing: five bursts of 80 calls, 300 ms apart, whose handlers spin 4 ms on the library's
 * executor (one thread per core); prints, per burst, the calls admitted and how many of them were
 * answered within the SLO of the burst's sending. It asserts nothing and reads the wall clock, so
 * it runs only when asked:
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
    for (int server = 0; server < 3; server++) {
      System.out.println("computing server " + server + ", admitted/within the SLO of 80 per burst:"
          + computingBursts());
    }
  }

  /** What a probe does with a fresh server's channel: one line of figures. */
  private interface Bursts {
    String run(ManagedChannel channel) throws Exception;
  }

  /** A fresh default-scheme server (SLO 100 ms) running {@code handler}, probed by {@code bursts}. */
  private static String onFreshServer(Echo.Handler handler, Bursts bursts) throws Exception {
    ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(Echo.service(handler));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(100)).install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = ManagedChannelBuilder.forAddress("localhost", server.getPort())
        .usePlaintext().build();
    try {
      return bursts.run(channel);
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }

  private static String computingBursts() throws Exception {
    Echo.Handler computing = (method, request, out) -> {
      long until = System.nanoTime() + 4_000_000;
      while (System.nanoTime() < until) {
        Thread.onSpinWait(); // 4 ms of a core
      }
      out.onNext("done:" + request);
      out.onCompleted();
    };
    return onFreshServer(computing, channel -> {
      StringBuilder line = new StringBuilder();
      for (int burst = 0; burst < 5; burst++) {
        long sent = System.nanoTime();
        List<Calls.Handle> calls = new ArrayList<>();
        List<java.util.concurrent.CompletableFuture<Long>> answeredAt = new ArrayList<>();
        for (int i = 0; i < 80; i++) {
          Calls.Handle h = Calls.unary(channel, Echo.UNARY, "b" + burst + "c" + i);
          calls.add(h);
          answeredAt.add(h.reply().thenApply(r -> System.nanoTime()));
        }
        int ok = 0;
        int inSlo = 0;
        for (int i = 0; i < calls.size(); i++) {
          if (calls.get(i).await().status().getCode() == Status.Code.OK) {
            ok++;
            if (answeredAt.get(i).get() - sent <= 100_000_000L) {
              inSlo++;
            }
          }
        }
        line.append(' ').append(ok).append('/').append(inSlo);
        Thread.sleep(300);
      }
      return line.toString();
    });
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
    return onFreshServer(blocking, channel -> {
      StringBuilder line = new StringBuilder();
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
      return line.toString();
    });
  }
}
