package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The README's gRPC quick start, compiled and run on a real (Netty) server on loopback, by a plain
 * client and a Spillway-aware one; and the README shows exactly these lines.
 */
class QuickStartTest {

  @Test
  void theQuickStartProtectsARealServerForPlainAndAwareClients() throws Exception {
    var service = Echo.service(Echo.ECHO); // the team's own service, as the README says
    int port = 0;
    // quick-start:server
    ServerBuilder<?> builder = ServerBuilder.forPort(port).addService(service);
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(5)).install(builder);
    Server server = builder.build().start();
    // quick-start:end
    port = server.getPort();
    // quick-start:client
    SpillwayClientInterceptor session = SpillwayGrpc.client().slo(Duration.ofMillis(5)).build();
    ManagedChannel channel = session.closeOnShutdown(ManagedChannelBuilder.forAddress("localhost", port)
        .usePlaintext().intercept(session).build());
    // quick-start:end
    ManagedChannel plain = ManagedChannelBuilder.forAddress("localhost", port).usePlaintext().build();
    try {
      for (Channel ch : new Channel[] {channel, plain}) {
        Calls.Reply reply = Calls.unary(ch, Echo.UNARY, "hi").await();
        assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
        assertEquals("echo:hi", reply.body());
        assertEquals("0", reply.trailer(SpillwayMetadata.STATUS));
      }
      Calls.Reply aware = Calls.unary(channel, Echo.UNARY, "x").await();
      assertTrue(aware.trailer(SpillwayMetadata.CREDIT_DELTA) != null
          || aware.trailer(SpillwayMetadata.STATUS) != null, aware.toString());
    } finally {
      session.close();
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      plain.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }

  @Test
  void theReadmeShowsTheseLines() throws Exception {
    String test = Files.readString(Path.of("src/test/java/io/spillway/grpc/QuickStartTest.java"));
    String readme = Files.readString(Path.of("../README.md"));
    List<String> snippet = new ArrayList<>();
    for (String part : new String[] {"quick-start:server", "quick-start:client"}) {
      int from = test.indexOf("// " + part) + part.length() + 3;
      int to = test.indexOf("// quick-start:end", from);
      for (String line : test.substring(from, to).split("\n")) {
        if (!line.isBlank()) {
          snippet.add(line.strip());
        }
      }
    }
    assertTrue(snippet.size() >= 5 && snippet.size() <= 10, "at most ten lines: " + snippet);
    int at = 0;
    for (String line : snippet) {
      int found = readme.indexOf(line, at);
      assertTrue(found >= 0, "README.md's quick start lacks (in order): " + line);
      at = found + line.length();
    }
  }
}
