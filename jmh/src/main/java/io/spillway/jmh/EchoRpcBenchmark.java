package io.spillway.jmh;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.Transport;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One loopback echo RPC, sequential, 8-byte payload: Spillway's server and client pipelines (frame
 * header, admission, dispatch to a virtual thread, credits on the response) against a plain Netty
 * pipeline doing the same echo with a 4-byte length prefix, handled on the event loop. Each over
 * io_uring, epoll and NIO. The difference is what Spillway's path costs per request at low load.
 *
 * <p>The forks open {@code java.lang} as the harness's server JVMs do, so Spillway's server runs its
 * requests on its measured carrier dispatcher ({@code parallelism(1)}: one carrier), not on the
 * JDK's default virtual-thread scheduler it falls back to (with a warning) without the flag.
 *
 * <p>Run: {@code ./spillway jmh EchoRpcBenchmark}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED"})
public class EchoRpcBenchmark {

  @Param({"io_uring", "epoll", "nio"})
  String transport;

  @Param({"plain-netty", "spillway-none", "spillway-breakwater"})
  String stack;

  private SpillwayServer server;
  private SpillwayClient client;
  private EventLoopGroup plainGroup;
  private Channel plainServer;
  private Channel plainClient;
  private PlainClientHandler plainHandler;
  private final byte[] payload = new byte[8];

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    Transport t = Transport.select(transport);
    if (stack.equals("plain-netty")) {
      plainGroup = t.newEventLoopGroup(2);
      plainServer = new ServerBootstrap().group(plainGroup).channel(t.serverChannelClass())
          .childOption(ChannelOption.TCP_NODELAY, true)
          .childHandler(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4),
                  new LengthFieldPrepender(4),
                  new SimpleChannelInboundHandler<ByteBuf>() {
                    @Override
                    protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                      ctx.writeAndFlush(msg.retain());
                    }
                  });
            }
          }).bind("127.0.0.1", 0).sync().channel();
      plainHandler = new PlainClientHandler();
      plainClient = new Bootstrap().group(plainGroup).channel(t.channelClass())
          .option(ChannelOption.TCP_NODELAY, true)
          .handler(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4),
                  new LengthFieldPrepender(4), plainHandler);
            }
          }).connect((InetSocketAddress) plainServer.localAddress()).sync().channel();
      return;
    }
    OverloadScheme scheme = stack.equals("spillway-none") ? NoControl.INSTANCE
        : Breakwater.of(BreakwaterConfig.forSlo(10_000_000, 50_000));
    server = SpillwayServer.builder().scheme(scheme).transport(t).parallelism(1)
        .handler((req, alloc) -> req.retainedDuplicate()).build().start();
    client = SpillwayClient.builder().scheme(scheme).transport(t).port(server.port())
        .sloNanos(10_000_000).build().start();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (client != null) {
      client.close();
      server.close();
    }
    if (plainGroup != null) {
      plainClient.close().syncUninterruptibly();
      plainServer.close().syncUninterruptibly();
      plainGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }

  @Benchmark
  public Object echo() throws Exception {
    if (client != null) {
      return client.session(0).call(payload).get(5, TimeUnit.SECONDS);
    }
    CompletableFuture<Object> f = new CompletableFuture<>();
    plainHandler.pending = f;
    plainClient.writeAndFlush(plainClient.alloc().buffer(8).writeBytes(payload));
    return f.get(5, TimeUnit.SECONDS);
  }

  static final class PlainClientHandler extends ChannelInboundHandlerAdapter {
    volatile CompletableFuture<Object> pending;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ((ByteBuf) msg).release();
      pending.complete(Boolean.TRUE);
    }
  }
}
