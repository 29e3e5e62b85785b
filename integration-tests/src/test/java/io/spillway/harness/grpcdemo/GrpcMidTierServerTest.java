package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.buffer.ByteBuf;
import io.spillway.harness.LeafHandler;
import io.spillway.harness.grpcdemo.proto.DemoGrpc;
import io.spillway.harness.grpcdemo.proto.WorkReply;
import io.spillway.harness.grpcdemo.proto.WorkRequest;
import io.spillway.threading.ThreadingModel;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The gRPC mid-tier of the µTune experiment answers every call with its own id after asking each of
 * its leaves once, running calls in-line (on the transport thread) or on its workers as configured.
 */
class GrpcMidTierServerTest {

  @Test
  void everyCallFansOutToEachLeafOnceAndGetsItsOwnAnswer() throws Exception {
    NioEventLoopGroup leafLoop = new NioEventLoopGroup(1);
    AtomicLong leafRequests = new AtomicLong();
    Channel leaves = new ServerBootstrap().group(leafLoop).channel(NioServerSocketChannel.class)
        .childHandler(new ChannelInitializer<>() {
          @Override
          protected void initChannel(Channel ch) {
            ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
              @Override
              public void channelRead(ChannelHandlerContext ctx, Object msg) {
                leafRequests.addAndGet(((ByteBuf) msg).readableBytes() / 8);
                ctx.fireChannelRead(msg);
              }
            }, new LeafHandler(50_000));
          }
        }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    int leafPort = ((InetSocketAddress) leaves.localAddress()).getPort();
    try {
      for (String config : List.of("static:IB", "static:DB4")) {
        leafRequests.set(0);
        try (GrpcMidTierServer.Running midTier = GrpcMidTierServer.start(leafPort, 4, 10_000, config)) {
          assertEquals(ThreadingModel.parse(config.substring("static:".length())),
              midTier.spillway().threadingModel().orElseThrow());
          ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", midTier.server().getPort())
              .usePlaintext().build();
          try {
            DemoGrpc.DemoBlockingStub blocking = DemoGrpc.newBlockingStub(channel);
            for (long id = 0; id < 20; id++) {
              assertEquals(id, blocking.work(WorkRequest.newBuilder().setId(id).build()).getId(), config);
            }
            DemoGrpc.DemoFutureStub async = DemoGrpc.newFutureStub(channel);
            List<ListenableFuture<WorkReply>> calls = new ArrayList<>();
            for (long id = 100; id < 140; id++) {
              calls.add(async.work(WorkRequest.newBuilder().setId(id).build()));
            }
            for (int i = 0; i < calls.size(); i++) {
              assertEquals(100 + i, calls.get(i).get(10, TimeUnit.SECONDS).getId(), config);
            }
          } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
          }
        }
        assertEquals(4 * 60, leafRequests.get(), config + ": each call asks each of the 4 leaves once");
      }
    } finally {
      leaves.close().sync();
      leafLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
  }
}
