package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.Status;
import io.grpc.inprocess.InProcessSocketAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import org.junit.jupiter.api.Test;

/** What the gRPC adapter tells the gate a call came through ({@code RequestMetadata.origin}). */
class CallOriginTest {

  @Test
  void aCallOverASocketNamesItsConnectionAndAnInProcessCallNone() {
    long a = SpillwayServerInterceptor.originOf(callFrom(new InetSocketAddress("127.0.0.1", 40001)));
    long b = SpillwayServerInterceptor.originOf(callFrom(new InetSocketAddress("127.0.0.1", 40002)));
    assertNotEquals(0, a);
    assertNotEquals(0, b);
    assertNotEquals(a, b, "two connections, two origins");
    assertEquals(a, SpillwayServerInterceptor.originOf(callFrom(new InetSocketAddress("127.0.0.1", 40001))),
        "the same connection, the same origin");
    assertEquals(0, SpillwayServerInterceptor.originOf(callFrom(new InProcessSocketAddress("quick"))));
    assertEquals(0, SpillwayServerInterceptor.originOf(callFrom(null)));
  }

  private static ServerCall<Object, Object> callFrom(SocketAddress remote) {
    Attributes attributes = remote == null ? Attributes.EMPTY
        : Attributes.newBuilder().set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, remote).build();
    return new ServerCall<>() {
      @Override public void request(int numMessages) { }
      @Override public void sendHeaders(Metadata headers) { }
      @Override public void sendMessage(Object message) { }
      @Override public void close(Status status, Metadata trailers) { }
      @Override public boolean isCancelled() { return false; }
      @Override public MethodDescriptor<Object, Object> getMethodDescriptor() { return null; }
      @Override public Attributes getAttributes() { return attributes; }
    };
  }
}
