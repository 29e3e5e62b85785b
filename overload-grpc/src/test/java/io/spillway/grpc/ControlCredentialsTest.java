package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.CallCredentials;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A server that authenticates every call: the session's control calls carry the per-call
 * credentials its application's calls carry, so its credit stream opens (in-process, virtual
 * time).
 */
class ControlCredentialsTest {

  private static final long SLO = 1_000_000;
  private static final Metadata.Key<String> AUTH =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  @Test
  void theCreditStreamCarriesTheApplicationsCallCredentials() throws Exception {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100_000_000);
    OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, 50_000));
    AtomicInteger creditsCalls = new AtomicInteger();
    ServerInterceptor authenticate = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        if (call.getMethodDescriptor().getFullMethodName().endsWith("/Credits")) {
          creditsCalls.incrementAndGet();
        }
        if (!"Bearer ok".equals(headers.get(AUTH))) {
          call.close(Status.UNAUTHENTICATED, new Metadata());
          return new ServerCall.Listener<>() { };
        }
        return next.startCall(call, headers);
      }
    };
    SpillwayControlService control = new SpillwayControlService(clock);
    control.bind(new ScriptedGate());
    CallCredentials creds = new CallCredentials() {
      @Override
      public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
        Metadata m = new Metadata();
        m.put(AUTH, "Bearer ok");
        applier.apply(m);
      }
    };
    try (InProcess grpc = new InProcess(
        ServerInterceptors.intercept(Echo.service(Echo.ECHO), authenticate),
        ServerInterceptors.intercept(control.serviceDefinition(), authenticate))) {
      SpillwayClientInterceptor session = SpillwayGrpc.client(breakwater).sloNanos(SLO)
          .ticker(clock).scheduler(clock).build();
      Channel ch = ClientInterceptors.intercept(grpc.channel(), session);
      for (int i = 0; i < 10; i++) {
        ClientCall<String, String> call = ch.newCall(Echo.UNARY,
            CallOptions.DEFAULT.withCallCredentials(creds));
        CompletableFuture<Status> closed = new CompletableFuture<>();
        call.start(new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            closed.complete(status);
          }
        }, new Metadata());
        call.request(1);
        call.sendMessage("x");
        call.halfClose();
        assertEquals(Status.Code.OK, closed.get(10, TimeUnit.SECONDS).getCode());
      }
      assertEquals(1, control.subscribers(), "the session's credit stream is open");
      assertEquals(1, creditsCalls.get(), "one Credits call, accepted");
      session.close();
    }
  }
}
