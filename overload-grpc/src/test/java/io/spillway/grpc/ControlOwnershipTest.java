package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.testing.VirtualClock;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A session's credit stream binds it to its connection: another connection's Credits, Demand or
 * Deregister naming it is refused, and one connection's streams are capped (the native
 * transport's rules for sessions, for gRPC's control service).
 */
class ControlOwnershipTest {

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private final List<String> gateHeard = new ArrayList<>();
  private final SpillwayControlService control = new SpillwayControlService(clock);

  ControlOwnershipTest() {
    control.bind(new ServerGate() {
      @Override
      public ServerPermit admit(RequestMetadata request, long nowNanos) {
        throw new AssertionError("no calls here");
      }

      @Override
      public void onDemand(long sessionId, int demand, long nowNanos) {
        gateHeard.add("demand " + sessionId + " " + demand);
      }

      @Override
      public void deregister(long sessionId, long nowNanos) {
        gateHeard.add("deregister " + sessionId);
      }
    });
  }

  /** A server call from {@code port} on loopback that records how it ended and what it sent. */
  private static final class Call<Q, R> extends ServerCall<Q, R> {
    final MethodDescriptor<Q, R> method;
    final Attributes attributes;
    final List<R> sent = new ArrayList<>();
    Status closed;
    boolean headersSent;

    Call(MethodDescriptor<Q, R> method, int port) {
      this.method = method;
      this.attributes = Attributes.newBuilder().set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR,
          new InetSocketAddress("127.0.0.1", port)).build();
    }

    @Override public void request(int numMessages) { }
    @Override public void sendHeaders(Metadata headers) { headersSent = true; }
    @Override public void sendMessage(R message) { sent.add(message); }
    @Override public void close(Status status, Metadata trailers) { closed = status; }
    @Override public boolean isCancelled() { return false; }
    @Override public MethodDescriptor<Q, R> getMethodDescriptor() { return method; }
    @Override public Attributes getAttributes() { return attributes; }
  }

  @SuppressWarnings("unchecked")
  private <Q, R> ServerCall.Listener<Q> start(Call<Q, R> call, long session) {
    Metadata headers = new Metadata();
    headers.put(SpillwayMetadata.SESSION, Long.toString(session));
    ServerCallHandler<Q, R> handler = (ServerCallHandler<Q, R>) control.serviceDefinition()
        .getMethod(call.method.getFullMethodName()).getServerCallHandler();
    return handler.startCall(call, headers);
  }

  @Test
  void anotherConnectionCannotTakeDeregisterOrReportForASessionWithAStream() {
    Call<byte[], ControlMarshallers.CreditMessage> own = new Call<>(SpillwayControlService.CREDITS, 40001);
    ServerCall.Listener<byte[]> ownStream = start(own, 7);
    assertNull(own.closed);

    Call<byte[], ControlMarshallers.CreditMessage> stolen = new Call<>(SpillwayControlService.CREDITS, 40002);
    start(stolen, 7);
    assertEquals(Status.Code.PERMISSION_DENIED, stolen.closed.getCode());
    Call<byte[], byte[]> deregister = new Call<>(SpillwayControlService.DEREGISTER, 40002);
    start(deregister, 7);
    assertEquals(Status.Code.PERMISSION_DENIED, deregister.closed.getCode());
    Call<byte[], byte[]> demand = new Call<>(SpillwayControlService.DEMAND, 40002);
    start(demand, 7);
    assertEquals(Status.Code.PERMISSION_DENIED, demand.closed.getCode());
    assertEquals(List.of(), gateHeard, "the gate heard nothing of the other connection's calls");

    control.sendCredit(7, 3);
    assertEquals(List.of(new ControlMarshallers.CreditMessage(3, 0, 0)), own.sent,
        "the session's credit still reaches its own stream");
    assertNull(own.closed);

    // its own connection may still deregister it, and a stream of its own replaces the first
    Call<byte[], ControlMarshallers.CreditMessage> again = new Call<>(SpillwayControlService.CREDITS, 40001);
    start(again, 7);
    assertEquals(Status.Code.ABORTED, own.closed.getCode());
    Call<byte[], byte[]> ownDeregister = new Call<>(SpillwayControlService.DEREGISTER, 40001);
    start(ownDeregister, 7);
    assertEquals(Status.Code.OK, ownDeregister.closed.getCode());
    assertEquals(List.of("deregister 7"), gateHeard);
    ownStream.onCancel(); // the replaced stream's cancel leaves the session alone
    assertEquals(1, control.subscribers());
  }

  @Test
  void oneConnectionHasAtMostItsCapOfCreditStreams() {
    for (int i = 1; i <= SpillwayControlService.MAX_STREAMS_PER_CONNECTION; i++) {
      Call<byte[], ControlMarshallers.CreditMessage> c = new Call<>(SpillwayControlService.CREDITS, 40003);
      start(c, i);
      assertNull(c.closed);
    }
    Call<byte[], ControlMarshallers.CreditMessage> beyond = new Call<>(SpillwayControlService.CREDITS, 40003);
    start(beyond, 1_000_000);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, beyond.closed.getCode());
    Call<byte[], ControlMarshallers.CreditMessage> otherConnection = new Call<>(SpillwayControlService.CREDITS, 40004);
    start(otherConnection, 1_000_000);
    assertNull(otherConnection.closed, "the cap is per connection");
    assertEquals(SpillwayControlService.MAX_STREAMS_PER_CONNECTION + 1, control.subscribers());
  }
}
