package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.api.InterfacePrices;
import io.spillway.api.NoControl;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SpillwayClientInterceptorTest {

  private static final long TIMEOUT = 500_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100_000);
  private final ScriptedGate serverGate = new ScriptedGate();
  private final List<StreamObserver<String>> held = new ArrayList<>();
  private final InterfaceRegistry interfaces = InterfaceRegistry.of(Echo.DESCRIPTOR);
  private InProcess grpc;

  /** A server over {@link #serverGate} with the control service; "hold" requests are held open. */
  private Channel server() {
    SpillwayControlService control = new SpillwayControlService(clock);
    control.bind(serverGate);
    Echo.Handler handler = (method, request, out) -> {
      if (request.startsWith("hold")) {
        held.add(out);
      } else {
        Echo.ECHO.handle(method, request, out);
      }
    };
    grpc = new InProcess(ServerInterceptors.intercept(Echo.service(handler),
        new SpillwayServerInterceptor(serverGate, clock, interfaces, control)),
        control.serviceDefinition());
    return grpc.channel();
  }

  private SpillwayClientInterceptor session(WindowClientGate gate, long sessionId) {
    return new SpillwayClientInterceptor(gate, sessionId, false, clock, clock, interfaces);
  }

  @AfterEach
  void closeServer() {
    if (grpc != null) {
      grpc.close();
    }
  }

  @Test
  void theGatesFieldsRideInTheHeaders() {
    SpillwayClientInterceptor session = SpillwayGrpc.client(NoControl.INSTANCE).sessionId(42)
        .sloNanos(1_000_000).ticker(clock).scheduler(clock).build();
    Channel channel = ClientInterceptors.intercept(server(), session);

    Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "hi").await();

    assertEquals("echo:hi", reply.body());
    assertEquals(42, serverGate.last().sessionId());
    assertEquals(0, session.queued());
    session.close();
    assertEquals(List.of(42L), serverGate.deregistered, "close deregisters the session");
    Calls.Reply late = Calls.unary(channel, Echo.UNARY, "late").await();
    assertEquals(Status.Code.UNAVAILABLE, late.status().getCode());
    assertEquals(1, serverGate.requests.size());
  }

  @Test
  void aCallTheGateRefusesFailsAtOnce() {
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    gate.refuse = true;
    Channel channel = ClientInterceptors.intercept(server(), session(gate, 1));

    Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "hi").await();

    assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode());
    assertEquals("spillway: rejected in the client (limit)", reply.status().getDescription());
    assertTrue(serverGate.requests.isEmpty());
  }

  @Test
  void aQueuedCallExpiresAtItsTimeoutDrivenByTheScheduler() {
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    gate.window = 0;
    SpillwayClientInterceptor session = session(gate, 1);
    Channel channel = ClientInterceptors.intercept(server(), session);

    Calls.Handle call = Calls.unary(channel, Echo.UNARY, "hi");
    clock.advance(TIMEOUT - 1);
    assertFalse(call.reply().isDone(), "still waiting for a credit");
    assertEquals(1, session.queued());
    clock.advance(1);

    Calls.Reply reply = call.await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode());
    assertEquals("spillway: expired in the client queue", reply.status().getDescription());
    assertEquals(0, session.queued());
    assertTrue(serverGate.requests.isEmpty(), "an expired call is never sent");
  }

  @Test
  void aQueuedCallItsApplicationCancelsLeavesTheQueueAtOnce() {
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    gate.window = 0;
    SpillwayClientInterceptor session = session(gate, 1);
    Channel channel = ClientInterceptors.intercept(server(), session);

    Calls.Handle first = Calls.unary(channel, Echo.UNARY, "a");
    Calls.Handle second = Calls.unary(channel, Echo.UNARY, "b");
    assertEquals(2, session.queued());
    first.call().cancel("gave up", null);

    assertEquals(Status.Code.CANCELLED, first.await().status().getCode());
    assertEquals(1, session.queued(), "only the call still wanted waits, and is the demand");
    clock.advance(TIMEOUT);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, second.await().status().getCode());
    assertEquals(0, session.queued());
    assertTrue(serverGate.requests.isEmpty());
  }

  /**
   * A queued call whose caller's gRPC context is cancelled (as gRPC cancels a server handler's
   * context when its own call ends) leaves the queue at once and ends CANCELLED, unsent: it no
   * longer counts in the demand the session reports, nor takes the next credit.
   */
  @Test
  void aQueuedCallWhoseCallersContextIsCancelledLeavesTheQueueAtOnce() throws Exception {
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    gate.window = 0;
    SpillwayClientInterceptor session = session(gate, 1);
    Channel channel = ClientInterceptors.intercept(server(), session);

    io.grpc.Context.CancellableContext caller = io.grpc.Context.current().withCancellation();
    Calls.Handle first = caller.call(() -> Calls.unary(channel, Echo.UNARY, "a"));
    Calls.Handle second = Calls.unary(channel, Echo.UNARY, "b");
    assertEquals(2, session.queued());
    caller.cancel(null);

    assertEquals(Status.Code.CANCELLED, first.await().status().getCode());
    assertEquals(1, session.queued(), "only the call still wanted waits, and is the demand");
    clock.advance(TIMEOUT);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, second.await().status().getCode());
    assertTrue(serverGate.requests.isEmpty());
  }

  @Test
  void aHeldCallReplaysWhatTheApplicationDidWhenReleased() {
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    gate.window = 1;
    Channel channel = ClientInterceptors.intercept(server(), session(gate, 1));

    Calls.Handle first = Calls.unary(channel, Echo.UNARY, "hold");
    Calls.Handle second = Calls.start(channel, Echo.OTHER, new io.grpc.Metadata(), false);
    second.call().sendMessage("a");
    second.call().halfClose();
    assertEquals(1, serverGate.requests.size(), "the second call waits for the first call's credit");
    assertFalse(second.reply().isDone());

    held.get(0).onNext("done");
    held.get(0).onCompleted(); // frees the window: the second call starts and replays its message

    assertEquals("done", first.await().body());
    Calls.Reply replayed = second.await();
    assertEquals(Status.Code.OK, replayed.status().getCode());
    assertEquals(List.of("echo:a"), replayed.messages());
    assertEquals(List.of(interfaces.idOf(Echo.UNARY), interfaces.idOf(Echo.OTHER)), gate.polledInterfaces,
        "the gate sees each queued call's interface");
    assertEquals(0, gate.inFlight);
  }

  @Test
  void theServersPriceListReachesTheGateInTheClientsInterfaceIds() {
    InterfacePrices list = InterfacePrices.of(
        new int[] {interfaces.idOf(Echo.UNARY), interfaces.idOf(Echo.OTHER), interfaces.idOf(Echo.CHAT)},
        new long[] {5, 40, 9}); // one list for every response, as a Rajomon gate between updates
    serverGate.fill = (request, response) -> response.price(5).interfacePrices(list);
    InterfaceRegistry clientIds = InterfaceRegistry.of("test.Echo/Other"); // numbered differently
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    Channel channel = ClientInterceptors.intercept(server(),
        new SpillwayClientInterceptor(gate, 1, false, clock, clock, clientIds));

    assertEquals("echo:a", Calls.unary(channel, Echo.UNARY, "a").await().body());

    assertEquals(2, clientIds.idOf(Echo.UNARY), "assigned when the call was made");
    assertEquals(List.of(InterfacePrices.of(new int[] {2, 1}, new long[] {5, 40})), gate.priceLists,
        "Unary and Other in the client's ids; Chat, which this client never called, dropped");
    assertEquals(2, clientIds.size());

    assertEquals("echo:b", Calls.unary(channel, Echo.UNARY, "b").await().body());
    assertEquals(gate.priceLists.get(0), gate.priceLists.get(1),
        "the second response carries the same list (its text formatted once)");
  }

  @Test
  void answersAndRejectsFeedTheGateWithTheCallsInterface() {
    serverGate.decide = request -> request.interfaceId() == interfaces.idOf(Echo.OTHER)
        ? io.spillway.api.Status.REJECTED_PRICE : io.spillway.api.Status.OK;
    serverGate.fill = (request, response) -> {
      if (response.status() == io.spillway.api.Status.OK) {
        response.creditDelta(1);
      } else {
        response.price(42);
      }
    };
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    gate.tokens = 30;
    Channel channel = ClientInterceptors.intercept(server(), session(gate, 1));

    assertEquals("echo:a", Calls.unary(channel, Echo.UNARY, "a").await().body());
    Calls.Reply rejected = Calls.unary(channel, Echo.OTHER, "b").await();

    assertEquals(Status.Code.RESOURCE_EXHAUSTED, rejected.status().getCode());
    assertEquals("spillway: rejected (price 42)", rejected.status().getDescription(),
        "the server's reason reaches the application as it is");
    assertEquals(30, serverGate.last().tokens());
    assertEquals(List.of(
        new WindowClientGate.Answer(io.spillway.api.Status.OK, interfaces.idOf(Echo.UNARY), 1,
            Long.MIN_VALUE, 0),
        new WindowClientGate.Answer(io.spillway.api.Status.REJECTED_PRICE, interfaces.idOf(Echo.OTHER), 0,
            42, 0)), gate.answers);
  }

  @Test
  void aCallCancelledWhileQueuedEndsAtOnceAndIsNeverSent() {
    WindowClientGate gate = new WindowClientGate(1, TIMEOUT);
    gate.window = 0;
    Channel channel = ClientInterceptors.intercept(server(), session(gate, 1));
    Calls.Handle cancelled = Calls.unary(channel, Echo.UNARY, "a");
    Calls.Handle kept = Calls.unary(channel, Echo.UNARY, "b");

    cancelled.call().cancel("changed my mind", null);
    Calls.Reply reply = cancelled.await();
    assertEquals(Status.Code.CANCELLED, reply.status().getCode());
    assertEquals("changed my mind", reply.status().getDescription());

    gate.window = 1;
    Calls.Handle third = Calls.unary(channel, Echo.UNARY, "c"); // its offer drains the queue

    assertEquals("echo:b", kept.await().body());
    assertEquals("echo:c", third.await().body());
    assertEquals(2, serverGate.requests.size(), "the cancelled call never left the client");
    assertEquals(2, gate.answers.size(), "withdrawn while queued: the gate never released it");
    assertTrue(gate.answers.stream().allMatch(a -> a.status() == io.spillway.api.Status.OK));
    assertEquals(0, gate.inFlight);
  }

  @Test
  void closingFailsQueuedCallsAndDeregisters() {
    WindowClientGate gate = new WindowClientGate(9, TIMEOUT);
    gate.window = 0;
    SpillwayClientInterceptor session = session(gate, 9);
    Channel channel = ClientInterceptors.intercept(server(), session);
    Calls.Handle queued = Calls.unary(channel, Echo.UNARY, "a");

    session.close();
    session.close();

    Calls.Reply reply = queued.await();
    assertEquals(Status.Code.UNAVAILABLE, reply.status().getCode());
    assertEquals("spillway: client session closed", reply.status().getDescription());
    assertEquals(List.of(9L), serverGate.deregistered);
    clock.advance(2 * TIMEOUT); // the cancelled wake-up does nothing
    assertEquals(0, session.queued());
  }
}
