package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code spillway.Control} spoken by a raw client, as a non-Java client would. */
class SpillwayControlServiceTest {

  private final VirtualClock clock = new VirtualClock();
  private final ScriptedGate gate = new ScriptedGate();
  private final SpillwayControlService control = new SpillwayControlService(clock);
  private final InProcess grpc;
  private final Channel channel;
  /** Messages the service sent on a stream that was not ready for them (its client not reading). */
  private final java.util.concurrent.atomic.AtomicInteger sentWhileNotReady =
      new java.util.concurrent.atomic.AtomicInteger();

  SpillwayControlServiceTest() {
    control.bind(gate);
    grpc = new InProcess(io.grpc.ServerInterceptors.intercept(control.serviceDefinition(),
        new io.grpc.ServerInterceptor() {
          @Override
          public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, R> call,
              Metadata headers, io.grpc.ServerCallHandler<Q, R> next) {
            return next.startCall(new io.grpc.ForwardingServerCall.SimpleForwardingServerCall<>(call) {
              @Override
              public void sendMessage(R message) {
                if (!isReady()) {
                  sentWhileNotReady.incrementAndGet();
                }
                super.sendMessage(message);
              }
            }, headers);
          }
        }));
    channel = grpc.channel();
  }

  @AfterEach
  void close() {
    grpc.close();
  }

  /** A raw Credits subscriber. */
  private final class Subscriber extends ClientCall.Listener<ControlMarshallers.CreditMessage> {
    final List<Integer> credits = new CopyOnWriteArrayList<>();
    final List<ControlMarshallers.CreditMessage> messages = new CopyOnWriteArrayList<>();
    final CompletableFuture<Status> closed = new CompletableFuture<>();
    final ClientCall<byte[], ControlMarshallers.CreditMessage> call = channel.newCall(SpillwayControlService.CREDITS, CallOptions.DEFAULT);
    volatile boolean acknowledged;

    Subscriber(Metadata headers) {
      this(headers, 100);
    }

    Subscriber(Metadata headers, int request) {
      call.start(this, headers);
      call.request(request);
      call.sendMessage(new byte[0]);
      call.halfClose();
    }

    @Override
    public void onHeaders(Metadata headers) {
      acknowledged = true;
    }

    @Override
    public void onMessage(ControlMarshallers.CreditMessage credit) {
      credits.add(credit.delta());
      messages.add(credit);
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      closed.complete(status);
    }
  }

  @Test
  void creditsFlowToTheSessionsStream() {
    Subscriber five = new Subscriber(Calls.headers(SpillwayMetadata.SESSION, 5));
    assertTrue(five.acknowledged, "the server acknowledges the stream at once");
    assertEquals(1, control.subscribers());

    control.sendCredit(5, 3);
    control.sendCredit(5, -1);
    control.sendCredit(6, 1); // nobody listens for session 6

    assertEquals(List.of(3, -1), five.credits);
  }

  /**
   * A client that does not read its stream (stalled, or not a Spillway client at all) must not
   * make the server buffer every credit for it: while the stream is not ready, credits add up,
   * and their sum goes once the client reads.
   */
  @Test
  void creditsForAClientThatDoesNotReadAddUpUntilItDoes() {
    Subscriber stalled = new Subscriber(Calls.headers(SpillwayMetadata.SESSION, 5), 0);
    assertTrue(stalled.acknowledged);
    for (int i = 0; i < 1_000; i++) {
      control.sendCredit(5, i % 2 == 0 ? 2 : -1);
    }
    assertEquals(0, sentWhileNotReady.get(), "credit messages queued for a client not reading");

    stalled.call.request(10);

    assertEquals(500, stalled.credits.stream().mapToInt(Integer::intValue).sum(),
        "what the credits add up to: " + stalled.credits);
    assertTrue(stalled.credits.size() <= 2, stalled.credits.toString());
    control.sendCredit(5, 1);
    assertEquals(501, stalled.credits.stream().mapToInt(Integer::intValue).sum(),
        "a reading client's credits go at once");
  }

  /**
   * A sum of credits beyond an int goes in several messages. The newest stamp gives the window
   * after every one of them, so it rides on the last: a client that takes its window from the
   * stamp must apply no delta after it.
   */
  @Test
  void aSumBeyondAnIntCarriesItsStampOnTheLastMessage() {
    Subscriber stalled = new Subscriber(Calls.headers(SpillwayMetadata.SESSION, 5), 0);
    control.sendCredit(5, Integer.MAX_VALUE, 7, 1);
    control.sendCredit(5, Integer.MAX_VALUE, 9, 2);
    control.sendCredit(5, 3, 11, 3);

    stalled.call.request(10);

    List<ControlMarshallers.CreditMessage> sent = stalled.messages;
    assertEquals(2L * Integer.MAX_VALUE + 3,
        sent.stream().mapToLong(ControlMarshallers.CreditMessage::delta).sum(), sent.toString());
    ControlMarshallers.CreditMessage last = sent.getLast();
    assertEquals(11, last.window(), sent.toString());
    assertEquals(3, last.seq(), sent.toString());
    assertTrue(sent.subList(0, sent.size() - 1).stream().allMatch(m -> m.seq() == 0),
        "only the last is stamped: " + sent);
  }

  @Test
  void aStreamWithoutSessionIsRefused() {
    Subscriber nobody = new Subscriber(new Metadata());
    assertEquals(Status.Code.INVALID_ARGUMENT, nobody.closed.join().getCode());
    assertEquals(0, control.subscribers());
  }

  @Test
  void cancellingTheStreamDeregistersButSupersedingItDoesNot() {
    Subscriber first = new Subscriber(Calls.headers(SpillwayMetadata.SESSION, 5));
    Subscriber second = new Subscriber(Calls.headers(SpillwayMetadata.SESSION, 5));
    assertEquals(Status.Code.ABORTED, first.closed.join().getCode());
    assertTrue(gate.deregistered.isEmpty());
    assertEquals(1, control.subscribers());

    second.call.cancel("client closed", null);
    assertEquals(List.of(5L), gate.deregistered, "the session's stream is its lease");
    assertEquals(0, control.subscribers());
  }

  @Test
  void demandAndDeregisterAreUnaryCalls() {
    assertEquals(Status.Code.OK, unary(SpillwayControlService.DEMAND,
        Calls.headers(SpillwayMetadata.SESSION, 5, SpillwayMetadata.DEMAND, 4)).getCode());
    assertEquals(Status.Code.OK, unary(SpillwayControlService.DEREGISTER,
        Calls.headers(SpillwayMetadata.SESSION, 5)).getCode());
    assertEquals(Status.Code.INVALID_ARGUMENT, unary(SpillwayControlService.DEREGISTER,
        Calls.headers(SpillwayMetadata.SESSION, "five")).getCode());
    assertEquals(List.of("5:4"), gate.demands);
    assertEquals(List.of(5L), gate.deregistered);
  }

  @Test
  void closingEndsEveryStream() {
    Subscriber five = new Subscriber(Calls.headers(SpillwayMetadata.SESSION, 5));
    control.close();
    assertEquals(Status.Code.UNAVAILABLE, five.closed.join().getCode());
    assertTrue(gate.deregistered.isEmpty(), "a server shutting down deregisters nobody");
    Subscriber late = new Subscriber(Calls.headers(SpillwayMetadata.SESSION, 6));
    assertFalse(late.acknowledged);
    assertEquals(Status.Code.UNAVAILABLE, late.closed.join().getCode());
  }

  private Status unary(io.grpc.MethodDescriptor<byte[], byte[]> method, Metadata headers) {
    ClientCall<byte[], byte[]> call = channel.newCall(method, CallOptions.DEFAULT);
    CompletableFuture<Status> closed = new CompletableFuture<>();
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onClose(Status status, Metadata trailers) {
        closed.complete(status);
      }
    }, headers);
    call.request(1);
    call.sendMessage(new byte[0]);
    call.halfClose();
    return closed.join();
  }
}
