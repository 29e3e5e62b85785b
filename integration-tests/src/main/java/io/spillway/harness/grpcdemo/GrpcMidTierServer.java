package io.spillway.harness.grpcdemo;

import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.stub.StreamObserver;
import io.spillway.api.NoControl;
import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import io.spillway.harness.MidTierServer;
import io.spillway.harness.grpcdemo.proto.DemoGrpc;
import io.spillway.harness.grpcdemo.proto.WorkReply;
import io.spillway.harness.grpcdemo.proto.WorkRequest;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The µTune experiment's mid-tier served over gRPC (docs/results/mutune.md, "gRPC"), in its own
 * process on core 0: {@code Demo/Work}'s handler does the mid-tier's own work, sends one request to
 * each leaf and blocks on their replies ({@link MidTierServer#query}), as µTune's synchronous
 * mid-tier does (mutune-osdi18 §3.2). gRPC reads calls on one Netty transport thread; {@link
 * SpillwayGrpcServer}'s threading adaptation decides per call whether it runs there (in-line, as
 * {@code directExecutor()}) or on the workers (dispatch), with no admission control in front. A
 * static configuration is a profile of one model, so every configuration runs the same stack and
 * differs only in where calls run.
 *
 * <p>Usage: {@code GrpcMidTierServer LEAF_PORT LEAVES LOCAL_WORK_US static:MODEL|adaptive:PROFILE}.
 * Prints {@code SPILLWAY-PORT n} and serves until standard input closes; a line {@code model} is
 * answered {@code SPILLWAY-MODEL <model> <switches>}, a line {@code jit} with {@code jit <ms>}, the
 * milliseconds this JVM's compilers have spent so far.
 */
public final class GrpcMidTierServer {

  private GrpcMidTierServer() { }

  public static void main(String[] args) throws Exception {
    if (args.length != 4 || !(args[3].startsWith("static:") || args[3].startsWith("adaptive:"))) {
      System.err.println("usage: GrpcMidTierServer LEAF_PORT LEAVES LOCAL_WORK_US static:MODEL|adaptive:PROFILE");
      System.exit(2);
    }
    String config = args[3];
    try (Running running = start(Integer.parseInt(args[0]), Integer.parseInt(args[1]),
        Long.parseLong(args[2]) * 1_000, config)) {
      System.err.println("grpc mid-tier: " + config + ", " + args[1] + " leaves");
      System.out.println("SPILLWAY-PORT " + running.server().getPort());
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.strip().equals("model")) {
          System.out.println("SPILLWAY-MODEL " + running.spillway().threadingModel().orElseThrow() + " "
              + running.spillway().threadingSwitches());
          System.out.flush();
        } else if (line.strip().equals("jit")) {
          System.out.println("jit " + io.spillway.harness.SteadyCapacity.ownJitMillis());
          System.out.flush();
        }
      }
    }
  }

  /** A started mid-tier; closing it stops the server, its workers and its loops. */
  record Running(Server server, SpillwayGrpcServer spillway, CarrierDispatcher pool, NioEventLoopGroup boss,
      NioEventLoopGroup transport) implements AutoCloseable {
    @Override
    public void close() throws InterruptedException {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
      pool.close();
      boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      transport.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  /**
   * Starts the mid-tier on a free port, its leaves at {@code leafPort} (reached on each thread's
   * first call); {@code config} as in the usage line.
   */
  static Running start(int leafPort, int leaves, long localWorkNanos, String config) throws IOException {
    ThreadingProfile profile;
    if (config.startsWith("adaptive:")) {
      profile = ThreadingProfile.read(Path.of(config.substring("adaptive:".length())));
    } else {
      ThreadingModel only = ThreadingModel.parse(config.substring("static:".length()));
      profile = ThreadingProfile.builder().add(only, 1, 1e6).add(only, 1e6, 1e6).build();
    }
    int workers = Math.max(1, profile.models().stream().mapToInt(ThreadingModel::workers).max().orElse(1));
    ThreadLocal<SocketChannel[]> connections = ThreadLocal.withInitial(() -> MidTierServer.connect(leafPort, leaves));
    DemoGrpc.DemoImplBase service = new DemoGrpc.DemoImplBase() {
      @Override
      public void work(WorkRequest request, StreamObserver<WorkReply> out) {
        try {
          long merged = MidTierServer.query(connections.get(), localWorkNanos);
          out.onNext(WorkReply.newBuilder().setId(request.getId() + merged - leaves).build());
          out.onCompleted();
        } catch (IOException e) {
          out.onError(Status.UNAVAILABLE.withDescription("leaf: " + e.getMessage()).asException());
        }
      }
    };
    NioEventLoopGroup boss = new NioEventLoopGroup(1);
    NioEventLoopGroup transport = new NioEventLoopGroup(1); // one network thread, as the socket mid-tier
    NettyServerBuilder builder = NettyServerBuilder.forPort(0).bossEventLoopGroup(boss)
        .workerEventLoopGroup(transport).channelType(NioServerSocketChannel.class).addService(service);
    // A fixed pool of the model's size (DB16: 16 threads), as µTune's dispatch models have; each
    // thread keeps its own connections to the leaves.
    CarrierDispatcher pool = CarrierDispatcher.platform(workers, Ticker.system());
    SpillwayGrpcServer spillway = SpillwayGrpc.server(NoControl.INSTANCE).slo(Duration.ofSeconds(1))
        .parallelism(workers).executor(pool, pool.queueDelay())
        .adaptiveThreading(ThreadingAdaptation.of(profile)).install(builder);
    return new Running(builder.build().start(), spillway, pool, boss, transport);
  }
}
