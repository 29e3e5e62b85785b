package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.api.Outcome;
import io.spillway.api.testing.VirtualClock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A gate whose completion throws (a scheme's bug, or the metrics it reports to) does not keep the
 * call from ending: the permit is complete, and the call closes.
 */
class ThrowingGateTest {

  private final VirtualClock clock = new VirtualClock();

  @Test
  void aCallClosedFromTheApplicationsThreadEndsWhenThePermitsCompletionThrows() {
    ScriptedGate gate = new ScriptedGate();
    gate.fill = (request, response) -> {
      throw new IllegalArgumentException("metrics broke");
    };
    List<StreamObserver<String>> held = new CopyOnWriteArrayList<>();
    try (InProcess server = new InProcess(ServerInterceptors.intercept(
        Echo.service((m, req, out) -> held.add(out)), new SpillwayServerInterceptor(gate, clock)))) {
      Calls.Handle call = Calls.unary(server.channel(), Echo.UNARY, "x");
      assertEquals(1, held.size());
      try { // the application answers later, from a thread of its own
        held.get(0).onNext("late");
        held.get(0).onCompleted();
      } catch (RuntimeException thrownIntoTheApplication) {
        // what the application sees is beside the point; the call must end
      }
      assertEquals(List.of(Outcome.SUCCESS), gate.outcomes);
      assertTrue(call.reply().isDone(), "the call never closed");
      assertEquals(Status.Code.OK, call.await().status().getCode());
    }
  }
}
