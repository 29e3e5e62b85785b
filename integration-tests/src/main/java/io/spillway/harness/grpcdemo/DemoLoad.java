package io.spillway.harness.grpcdemo;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.spillway.grpc.PerBackendSessions;
import io.spillway.grpc.SpillwayBalancedChannel;
import java.net.InetSocketAddress;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.harness.grpcdemo.proto.DemoGrpc;
import io.spillway.harness.grpcdemo.proto.WorkReply;
import io.spillway.harness.grpcdemo.proto.WorkRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.HdrHistogram.Histogram;

/**
 * The demo's load generator: several gRPC channels to one server, plain (no Spillway headers: what
 * ghz, grpcurl or another language's client sends) or Spillway-aware (one
 * {@link SpillwayClientInterceptor} session per channel, as the quick start sets one up), driven
 * open-loop (Poisson arrivals at a fixed rate, each stamped with its scheduled time so a
 * generator that falls behind adds to latency instead of hiding it) or closed-loop (a fixed number
 * outstanding, for capacity).
 *
 * <p>Every call carries a 1 s deadline, a generous client timeout that bounds what a collapsed
 * server can leave outstanding. A call's latency runs from its scheduled time to its answer,
 * client queueing included (docs/design.md, "Measures").
 *
 * <p>Calls are issued from the caller's thread, which parks between arrivals (a call issued late
 * still counts from its scheduled time); answers arrive on one Netty event loop.
 */
final class DemoLoad implements AutoCloseable {

  static final long DEADLINE_MS = 1_000;

  private final NioEventLoopGroup group = new NioEventLoopGroup(1);
  private final List<ManagedChannel> managed = new ArrayList<>();
  private final List<SpillwayClientInterceptor> sessions = new ArrayList<>();
  private final List<SpillwayBalancedChannel> balanced = new ArrayList<>();
  private final List<PerBackendSessions> perBackend = new ArrayList<>();
  private SpringClientChannels spring;
  private final Channel[] channels;
  private final long sloNanos;
  private final MethodDescriptor<WorkRequest, WorkReply> method;

  /** What the clients speak. */
  enum Kind {
    /** No Spillway headers. */
    PLAIN,
    /** One Spillway session per channel. */
    AWARE,
    /** Each client a {@link SpillwayBalancedChannel} over every server, retrying 10 % at most. */
    BALANCED,
    /**
     * Each client a load-balancing channel to a {@code dns:///} target with
     * {@link PerBackendSessions} installed, as the Spring Boot starter sets up the channels Spring
     * gRPC builds.
     */
    PER_BACKEND,
    /**
     * Each client a channel of a Spring Boot client application with the Spillway starter
     * ({@link SpringClientChannels}): Spring gRPC builds it, the starter's customizer installs
     * {@link PerBackendSessions}.
     */
    SPRING_CLIENT
  }

  DemoLoad(int port, int channelCount, boolean aware, long sloNanos) {
    this(List.of(port), channelCount, aware ? Kind.AWARE : Kind.PLAIN, sloNanos);
  }

  /** {@code channelCount} clients; a plain or aware client {@code i} talks to {@code ports[i % n]}. */
  DemoLoad(List<Integer> ports, int channelCount, Kind kind, long sloNanos) {
    this(ports, channelCount, kind, sloNanos, DemoGrpc.getWorkMethod().getFullMethodName());
  }

  /**
   * As above, calling {@code fullMethodName} instead of {@code Demo/Work}: any unary method whose
   * request and reply are, on the wire, one int64 in field 1 (examples-spring's {@code
   * Inventory/Reserve} is), so that one generator drives both services.
   */
  DemoLoad(List<Integer> ports, int channelCount, Kind kind, long sloNanos, String fullMethodName) {
    this.sloNanos = sloNanos;
    this.method = DemoGrpc.getWorkMethod().toBuilder().setFullMethodName(fullMethodName).build();
    channels = new Channel[channelCount];
    for (int i = 0; i < channelCount; i++) {
      if (kind == Kind.BALANCED) {
        SpillwayBalancedChannel b = SpillwayGrpc.balanced().slo(java.time.Duration.ofNanos(sloNanos))
            .addresses(ports.stream().map(p -> new InetSocketAddress("127.0.0.1", p)).toList())
            .channelFactory(a -> NettyChannelBuilder.forAddress(a).usePlaintext()
                .eventLoopGroup(group).channelType(NioSocketChannel.class).directExecutor().build())
            .retryToReplica(0.1).build();
        balanced.add(b);
        channels[i] = b;
        continue;
      }
      int port = ports.get(i % ports.size());
      if (kind == Kind.SPRING_CLIENT) {
        if (spring == null) {
          spring = new SpringClientChannels(port, sloNanos);
        }
        channels[i] = spring.channel();
        continue;
      }
      if (kind == Kind.PER_BACKEND) {
        NettyChannelBuilder builder = NettyChannelBuilder.forTarget("dns:///127.0.0.1:" + port)
            .usePlaintext().eventLoopGroup(group).channelType(NioSocketChannel.class)
            .directExecutor();
        PerBackendSessions s = SpillwayGrpc.perBackend().slo(java.time.Duration.ofNanos(sloNanos))
            .build().install(builder);
        ManagedChannel ch = s.closeOnShutdown(builder.build());
        perBackend.add(s);
        managed.add(ch);
        channels[i] = ch;
        continue;
      }
      boolean aware = kind == Kind.AWARE;
      ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext()
          .eventLoopGroup(group).channelType(NioSocketChannel.class).directExecutor().build();
      managed.add(ch);
      if (aware) {
        SpillwayClientInterceptor session = SpillwayGrpc.client().sloNanos(sloNanos).build();
        sessions.add(session);
        channels[i] = ClientInterceptors.intercept(ch, session);
      } else {
        channels[i] = ch;
      }
    }
  }

  /** What one measured run saw. Latencies in nanoseconds; rates per second. */
  record Result(double offeredRps, long issued, long ok, long good, long serverRejects,
      long clientRejects, long errors, double measuredSeconds, Histogram okLatency,
      Histogram rejectLatency, String rejectsByReason) {

    double goodputRps() {
      return good / measuredSeconds;
    }

    double throughputRps() {
      return ok / measuredSeconds;
    }

    /** Rejected at the server ÷ received there (answered or rejected); NaN when none arrived. */
    double dropRate() {
      return io.spillway.sim.Tally.ratio(serverRejects, ok + serverRejects + errors);
    }
  }

  /** Counts the outcomes of calls scheduled inside the measured window. */
  private final class Tally {
    final long from;
    final long to;
    final Histogram okLatency = new Histogram(3_600_000_000_000L, 3);
    final Histogram rejectLatency = new Histogram(3_600_000_000_000L, 3);
    long ok;
    long good;
    long serverRejects;
    long clientRejects;
    long errors;
    long issued;
    final long[] byReason = new long[io.spillway.api.Status.values().length];
    final AtomicInteger outstanding = new AtomicInteger();

    Tally(long from, long to) {
      this.from = from;
      this.to = to;
    }

    synchronized void answered(long scheduledAt, Status status, Metadata trailers, long now) {
      outstanding.decrementAndGet();
      if (scheduledAt - from < 0 || scheduledAt - to >= 0) {
        return;
      }
      long latency = now - scheduledAt;
      if (status.isOk()) {
        ok++;
        okLatency.recordValue(Math.max(latency, 1));
        if (latency <= sloNanos) {
          good++;
        }
      } else if (status.getCode() == Status.Code.RESOURCE_EXHAUSTED) {
        String why = String.valueOf(status.getDescription());
        if (why.startsWith("spillway: expired in the client")
            || why.startsWith("spillway: rejected in the client")) {
          clientRejects++;
        } else {
          serverRejects++;
          rejectLatency.recordValue(Math.max(latency, 1));
          String code = trailers.get(SpillwayMetadata.STATUS);
          if (code != null) {
            try {
              byReason[Integer.parseInt(code)]++;
            } catch (RuntimeException malformed) {
              errors++;
            }
          }
        }
      } else {
        errors++;
      }
    }

    synchronized Result result(double offeredRps) {
      StringBuilder reasons = new StringBuilder();
      for (io.spillway.api.Status st : io.spillway.api.Status.values()) {
        if (byReason[st.code()] > 0) {
          reasons.append(reasons.isEmpty() ? "" : " ").append(st.name().toLowerCase(java.util.Locale.ROOT)
              .replace("rejected_", "")).append('=').append(byReason[st.code()]);
        }
      }
      return new Result(offeredRps, issued, ok, good, serverRejects, clientRejects, errors,
          (to - from) / 1e9, okLatency.copy(), rejectLatency.copy(), reasons.toString());
    }
  }

  private void call(Channel channel, long scheduledAt, Tally tally, long id) {
    ClientCall<WorkRequest, WorkReply> call = channel.newCall(method,
        CallOptions.DEFAULT.withDeadlineAfter(DEADLINE_MS, TimeUnit.MILLISECONDS));
    tally.outstanding.incrementAndGet();
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onClose(Status status, Metadata trailers) {
        tally.answered(scheduledAt, status, trailers, System.nanoTime());
      }
    }, new Metadata());
    call.request(1);
    call.sendMessage(WorkRequest.newBuilder().setId(id).build());
    call.halfClose();
  }

  /**
   * Poisson arrivals at {@code rps} for {@code warmNanos + measureNanos}; what was scheduled in the
   * last {@code measureNanos} is counted. Waits for the calls to end (at most their deadline).
   */
  Result openLoop(double rps, long warmNanos, long measureNanos, long seed) throws InterruptedException {
    long start = System.nanoTime();
    Tally tally = new Tally(start + warmNanos, start + warmNanos + measureNanos);
    long[] id = new long[1];
    PoissonArrivals.drive(rps, start, tally.to, seed, scheduled -> {
      call(channels[(int) (id[0] % channels.length)], scheduled, tally, id[0]);
      if (scheduled - tally.from >= 0) {
        synchronized (tally) {
          tally.issued++;
        }
      }
      id[0]++;
    });
    drain(tally);
    return tally.result(rps);
  }

  /** {@code outstanding} calls always in flight; returns the completion rate of the measured part. */
  double closedLoop(int outstanding, long warmNanos, long measureNanos) throws InterruptedException {
    long start = System.nanoTime();
    long[] counts = new long[1];
    long from = start + warmNanos;
    long end = from + measureNanos;
    AtomicInteger live = new AtomicInteger();
    Runnable[] issue = new Runnable[1];
    issue[0] = () -> {
      long now = System.nanoTime();
      if (now - end >= 0) {
        live.decrementAndGet();
        return;
      }
      ClientCall<WorkRequest, WorkReply> call = channels[(int) (now % channels.length)]
          .newCall(method, CallOptions.DEFAULT.withDeadlineAfter(DEADLINE_MS,
              TimeUnit.MILLISECONDS));
      call.start(new ClientCall.Listener<>() {
        @Override
        public void onClose(Status status, Metadata trailers) {
          long t = System.nanoTime();
          if (status.isOk() && t - from >= 0 && t - end < 0) {
            synchronized (counts) {
              counts[0]++;
            }
          }
          issue[0].run();
        }
      }, new Metadata());
      call.request(1);
      call.sendMessage(WorkRequest.newBuilder().setId(now).build());
      call.halfClose();
    };
    for (int i = 0; i < outstanding; i++) {
      live.incrementAndGet();
      issue[0].run();
    }
    while (live.get() > 0) {
      Thread.sleep(10);
    }
    synchronized (counts) {
      return counts[0] / (measureNanos / 1e9);
    }
  }

  private static void drain(Tally tally) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * DEADLINE_MS);
    while (tally.outstanding.get() > 0 && System.nanoTime() - until < 0) {
      Thread.sleep(5);
    }
  }

  /**
   * The Spring client application's channels: per channel, the backends with a session and the
   * calls sent without one; empty for other kinds.
   */
  String springSessions() {
    if (spring == null) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    for (PerBackendSessions s : spring.sessions()) {
      b.append(b.isEmpty() ? "" : " ").append(s.sessions().size()).append('/').append(s.plainCalls());
    }
    return "spring channels (backends/plain calls): " + b;
  }

  /** Calls the balanced clients retried on another server, and calls they made. */
  long[] retriesAndCalls() {
    long r = 0;
    long c = 0;
    for (SpillwayBalancedChannel b : balanced) {
      r += b.retries();
      c += b.calls();
    }
    return new long[] {r, c};
  }

  @Override
  public void close() {
    for (SpillwayBalancedChannel b : balanced) {
      b.close();
    }
    for (SpillwayClientInterceptor s : sessions) {
      s.close();
    }
    for (PerBackendSessions s : perBackend) {
      s.close();
    }
    if (spring != null) {
      spring.close();
    }
    for (ManagedChannel ch : managed) {
      ch.shutdownNow();
    }
    try {
      for (ManagedChannel ch : managed) {
        ch.awaitTermination(5, TimeUnit.SECONDS);
      }
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // closing goes on; the caller sees the interrupt
    }
  }
}
