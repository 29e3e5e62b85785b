package io.spillway.lucene;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import io.spillway.lucene.proto.SearchGrpc;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A {@link SearchService} on a real in-process gRPC server, protected as {@code ./spillway lucene}
 * protects it ({@code SpillwayGrpc.server().slo(..).install(builder)}), and a blocking stub.
 */
final class InProcessSearch implements AutoCloseable {

  private static int next;

  final Server server;
  final SpillwayGrpcServer spillway;
  final ManagedChannel channel;
  final SearchGrpc.SearchBlockingStub stub;

  InProcessSearch(SearchEngine engine, Duration slo) throws IOException {
    String name;
    synchronized (InProcessSearch.class) {
      name = "lucene-" + next++;
    }
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(new SearchService(engine));
    spillway = SpillwayGrpc.server().slo(slo).install(builder);
    server = builder.build().start();
    channel = InProcessChannelBuilder.forName(name).build();
    stub = SearchGrpc.newBlockingStub(channel);
  }

  @Override
  public void close() {
    try {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      spillway.close();
    }
  }
}
