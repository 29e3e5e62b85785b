package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.spillway.grpc.PerBackendSessions;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.harness.grpcdemo.proto.DemoGrpc;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The Spring client application the Spring demo's {@code grpc-spillway-spring-client}
 * configuration drives: against a protected demo server on a socket, each of its channels (built
 * by Spring gRPC, customized by the starter) keeps one session with the server, and no call goes
 * without one, the channels' first calls included. Accounting only; the demo's figures are in
 * docs/results/spring.md.
 */
class SpringClientChannelsTest {

  @Test
  void everyChannelOfTheSpringApplicationCallsThroughASessionOfItsOwn() throws Exception {
    Set<String> sessionsHeard = ConcurrentHashMap.newKeySet();
    AtomicInteger withoutSession = new AtomicInteger();
    ServerInterceptor recorder = new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
          Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        if (call.getMethodDescriptor().getFullMethodName().equals(
            DemoGrpc.getWorkMethod().getFullMethodName())) {
          String session = headers.get(SpillwayMetadata.SESSION);
          if (session == null) {
            withoutSession.incrementAndGet();
          } else {
            sessionsHeard.add(session);
          }
        }
        return next.startCall(call, headers);
      }
    };
    ServerBuilder<?> builder = ServerBuilder.forPort(0);
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(50)).install(builder);
    builder.addService(ServerInterceptors.intercept(new DemoService(10_000, 0), recorder));
    Server server = builder.build().start();
    try (DemoLoad load = new DemoLoad(List.of(server.getPort()), 3, DemoLoad.Kind.SPRING_CLIENT,
        Duration.ofMillis(50).toNanos())) {
      load.closedLoop(3, 0, Duration.ofMillis(300).toNanos());
      assertEquals("spring channels (backends/plain calls): 1/0 1/0 1/0", load.springSessions());
      assertEquals(0, withoutSession.get(), "every call carried a session");
      assertEquals(3, sessionsHeard.size(), "one session per channel: " + sessionsHeard);
    } finally {
      server.shutdownNow().awaitTermination();
      spillway.close();
    }
  }

  /** The sessions are the starter's: one {@link PerBackendSessions} per channel made. */
  @Test
  void theStarterGivesEachChannelItsSessions() throws Exception {
    Server server = ServerBuilder.forPort(0).addService(new DemoService(0, 0)).build().start();
    try (SpringClientChannels spring = new SpringClientChannels(server.getPort(), 5_000_000)) {
      spring.channel();
      spring.channel();
      List<PerBackendSessions> sessions = spring.sessions();
      assertEquals(2, sessions.size());
      assertTrue(sessions.get(0) != sessions.get(1));
    } finally {
      server.shutdownNow().awaitTermination();
    }
  }
}
