package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.VirtualClock;
import io.spillway.baselines.Dagor;
import io.spillway.baselines.DagorConfig;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** DAGOR over in-process gRPC: priorities travel in the headers, the level in the trailers. */
class DagorOverGrpcTest {

  private final VirtualClock clock = new VirtualClock();

  @Test
  void prioritiesReachTheServerAndTheLevelComesBack() {
    OverloadScheme dagor = Dagor.of(DagorConfig.forSlo(1_000_000));
    HeaderRecorder recorder = new HeaderRecorder();
    try (SpillwayGrpcServer spillway = SpillwayGrpc.server(dagor).ticker(clock).scheduler(clock)
        .queueDelay(QueueDelaySignal.NONE).build();
        InProcess grpc = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            spillway.interceptor(), recorder), spillway.controlService())) {
      SpillwayClientInterceptor session = SpillwayGrpc.client(dagor).sessionId(3).sloNanos(1_000_000)
          .ticker(clock).scheduler(clock).build();
      Channel channel = ClientInterceptors.intercept(grpc.channel(), session);

      Set<Integer> priorities = new HashSet<>();
      for (int i = 0; i < 30; i++) {
        Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "m" + i).await();
        assertEquals(Status.Code.OK, reply.status().getCode());
        assertEquals("128", reply.trailer(SpillwayMetadata.THRESHOLD), "an idle server admits every level");
      }
      for (Metadata headers : recorder.headers) {
        assertEquals("3", headers.get(SpillwayMetadata.SESSION));
        int priority = Integer.parseInt(headers.get(SpillwayMetadata.PRIORITY));
        assertTrue(priority >= 1 && priority <= 128, "priority " + priority);
        priorities.add(priority);
      }
      assertTrue(priorities.size() > 1, "random priorities: " + priorities);
      session.close();
    }
  }
}
