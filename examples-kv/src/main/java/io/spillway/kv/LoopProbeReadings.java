package io.spillway.kv;

import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * What the event loops' delay signal ({@link io.spillway.api.ExecutorBacklogProbe}) reads on the
 * transport a KV server runs on: the question {@link KvServer#defaultTransport} answers.
 *
 * <p>{@code serve PORT FRAME_PORT} starts a KV server on the transport {@code
 * -Dspillway.transport} names, the text port with {@link KvServer.Protection#SPILLWAY} (whose AQM
 * refuses on the loops' delay) and the native-frame port with no credits ({@link
 * KvServer.FrameScheme#NONE}). Both ports' gates are wrapped: at each admission the wrapper reads
 * the server's delay signal at the gate's own instant (what an AQM compares with its threshold).
 * On the text port it also submits a task to the loop it runs on, as the probe submits its own a
 * moment before (the handler stamps the probe, then admits), and records how long that task
 * waited to run; the frame server does not expose its loops, so there it reads only. Each line
 * read on stdin prints one line per port, headed by the line's text, and starts new counts.
 *
 * <p>{@code ping text|frame PORT REQUESTS} is a closed-loop client: one connection, one GET at a
 * time, the next sent when the reply is in, so the server has nothing queued when a request
 * arrives and every delay it reads for it is left over from the request before.
 *
 * <p>Run by {@code examples-kv/bench/probe-readings.sh}, which also offers open-loop load
 * ({@code ./spillway kv-load}, {@code kv-frame-load}) and cross-checks refusals with {@code stats}.
 */
public final class LoopProbeReadings {

  private LoopProbeReadings() { }

  public static void main(String[] args) throws Exception {
    if (args.length == 3 && args[0].equals("serve")) {
      serve(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
    } else if (args.length == 4 && args[0].equals("ping")) {
      ping(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
    } else {
      System.err.println("usage: LoopProbeReadings serve PORT FRAME_PORT | ping text|frame PORT REQUESTS");
      System.exit(2);
    }
  }

  private static void serve(int port, int framePort) throws Exception {
    Readings text = new Readings("text");
    Readings frame = new Readings("frame");
    KvServer server = KvServer.builder().port(port).framePort(framePort)
        .protection(KvServer.Protection.SPILLWAY).frameScheme(KvServer.FrameScheme.NONE)
        .textSchemeWrapper(text::wrap).frameSchemeWrapper(frame::wrap).build().start();
    text.loops = server.eventLoops();
    String transport = server.stats().lines().filter(l -> l.startsWith("STAT spillway_transport "))
        .findFirst().orElseThrow().substring("STAT spillway_transport ".length());
    System.out.println("serving transport " + transport + " port " + server.port() + " frame-port "
        + server.framePort());
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (server) {
      for (String label; (label = in.readLine()) != null; ) {
        System.out.println(text.reportAndReset(label.strip()));
        System.out.println(frame.reportAndReset(label.strip()));
        System.out.flush();
      }
    }
  }

  /** One port's readings; recorded on its event loops, reported from the main thread. */
  private static final class Readings {
    private final String port;
    private final Recorder taskLag = new Recorder(3);
    private final Recorder gateRead = new Recorder(3);
    private final LongAdder admitted = new LongAdder();
    private final LongAdder refused = new LongAdder();
    /** The loops admissions run on, where the lag task goes; null: none measured. */
    volatile EventLoopGroup loops;

    Readings(String port) {
      this.port = port;
    }

    OverloadScheme wrap(OverloadScheme scheme) {
      return new OverloadScheme() {
        @Override
        public String name() {
          return scheme.name();
        }

        @Override
        public boolean issuesCredits() {
          return scheme.issuesCredits();
        }

        @Override
        public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
          return scheme.newClientGate(environment);
        }

        @Override
        public ServerGate newServerGate(ServerEnvironment environment) {
          return new Recording(scheme.newServerGate(environment), environment.queueDelay());
        }
      };
    }

    private final class Recording implements ServerGate {
      private final ServerGate gate;
      private final QueueDelaySignal signal;

      Recording(ServerGate gate, QueueDelaySignal signal) {
        this.gate = gate;
        this.signal = signal;
      }

      @Override
      public ServerPermit admit(RequestMetadata request, long nowNanos) {
        gateRead.recordValue(signal.queueingDelayNanos(nowNanos));
        EventLoopGroup group = loops;
        if (group != null) {
          for (EventExecutor loop : group) {
            if (loop.inEventLoop()) {
              long submitted = System.nanoTime();
              loop.execute(() -> taskLag.recordValue(Math.max(0, System.nanoTime() - submitted)));
            }
          }
        }
        ServerPermit permit = gate.admit(request, nowNanos);
        (permit.status() == Status.OK ? admitted : refused).increment();
        return permit;
      }

      @Override
      public void onDemand(long sessionId, int demand, long nowNanos) {
        gate.onDemand(sessionId, demand, nowNanos);
      }

      @Override
      public void deregister(long sessionId, long nowNanos) {
        gate.deregister(sessionId, nowNanos);
      }

      @Override
      public void start() {
        gate.start();
      }

      @Override
      public void close() {
        gate.close();
      }
    }

    String reportAndReset(String label) {
      Histogram lag = taskLag.getIntervalHistogram();
      Histogram read = gateRead.getIntervalHistogram();
      long nonZero = read.getTotalCount() - read.getCountBetweenValues(0, 0);
      long over100 = read.getTotalCount() - read.getCountBetweenValues(0, 100_000);
      String lagText = lag.getTotalCount() == 0 ? "-" : String.format(Locale.ROOT,
          "mean %.1f p50 %.1f p99 %.1f max %.1f", lag.getMean() / 1e3,
          lag.getValueAtPercentile(50) / 1e3, lag.getValueAtPercentile(99) / 1e3, lag.getMaxValue() / 1e3);
      return String.format(Locale.ROOT,
          "%s %s admitted %d refused %d | task lag us %s | gate read us mean %.1f p99 %.1f max %.1f"
              + " nonzero %.2f %% over100us %.2f %%",
          label, port, admitted.sumThenReset(), refused.sumThenReset(), lagText,
          read.getMean() / 1e3, read.getValueAtPercentile(99) / 1e3, read.getMaxValue() / 1e3,
          share(nonZero, read), share(over100, read));
    }

    private static double share(long count, Histogram of) {
      return of.getTotalCount() == 0 ? 0 : 100.0 * count / of.getTotalCount();
    }
  }

  private static void ping(String port, int number, int requests) throws Exception {
    long[] rtt = new long[requests];
    int refused = 0;
    if (port.equals("text")) {
      byte[] get = "get probe-readings\r\n".getBytes(StandardCharsets.US_ASCII);
      try (Socket s = new Socket("127.0.0.1", number)) {
        s.setTcpNoDelay(true);
        OutputStream out = s.getOutputStream();
        InputStream in = new BufferedInputStream(s.getInputStream());
        for (int i = 0; i < requests; i++) {
          long start = System.nanoTime();
          out.write(get);
          out.flush();
          String line = line(in);
          if (line.startsWith("SERVER_ERROR")) {
            refused++;
          } else {
            while (!line.equals("END")) {
              line = line(in);
            }
          }
          rtt[i] = System.nanoTime() - start;
        }
      }
    } else {
      byte[] key = "probe-readings".getBytes(StandardCharsets.US_ASCII);
      try (KvClient client = KvClient.builder().port(number)
          .scheme(KvServer.FrameScheme.NONE.scheme(0)).start()) {
        for (int i = 0; i < requests; i++) {
          long start = System.nanoTime();
          try {
            client.get(key).get();
          } catch (ExecutionException e) {
            refused++;
          }
          rtt[i] = System.nanoTime() - start;
        }
      }
    }
    Arrays.sort(rtt);
    System.out.printf(Locale.ROOT, "ping %s requests %d refused %d rtt us p50 %.1f p99 %.1f%n", port, requests,
        refused, rtt[requests / 2] / 1e3, rtt[(int) (requests * 0.99)] / 1e3);
  }

  private static String line(InputStream in) throws IOException {
    StringBuilder b = new StringBuilder();
    for (int c; (c = in.read()) != '\n'; ) {
      if (c < 0) {
        throw new EOFException("server closed the connection");
      }
      if (c != '\r') {
        b.append((char) c);
      }
    }
    return b.toString();
  }
}
