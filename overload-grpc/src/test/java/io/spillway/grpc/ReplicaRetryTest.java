package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.spillway.api.testing.VirtualClock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** Retry to a replica: only after a fast reject, and every call ends once. Virtual time. */
class ReplicaRetryTest {

  private final VirtualClock clock = new VirtualClock();

  /**
   * An admitted call whose handler answers RESOURCE_EXHAUSTED has run (its trailers carry
   * spillway-status FAILED, not a reject): it may have had effects, and is not sent again.
   */
  @Test
  void aCallWhoseHandlerRanIsNotRetriedOnAnotherBackend() {
    AtomicInteger ranOnA = new AtomicInteger();
    AtomicInteger ranOnB = new AtomicInteger();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service((m, req, out) -> {
          ranOnA.incrementAndGet();
          out.onError(Status.RESOURCE_EXHAUSTED.withDescription("quota of the account")
              .asRuntimeException());
        }), new SpillwayServerInterceptor(new ScriptedGate(), clock)));
        InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service((m, req, out) -> {
          ranOnB.incrementAndGet();
          Echo.ECHO.handle(m, req, out);
        }), new SpillwayServerInterceptor(new ScriptedGate(), clock)))) {
      SpillwayBalancedChannel channel = SpillwayGrpc.balanced(io.spillway.api.NoControl.INSTANCE)
          .slo(Duration.ofMillis(5)).ticker(clock).scheduler(clock).retryToReplica(0.1)
          .picker(avoid -> avoid < 0 ? 0 : 1)
          .build(List.of(a.channel(), b.channel()));
      try {
        Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "x").await();
        assertEquals(1, ranOnA.get());
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode(),
            "the handler's own answer reaches the application");
        assertEquals(0, ranOnB.get(), "a call that ran was sent again to another backend");
        assertEquals(0, channel.retries());
      } finally {
        channel.close();
      }
    }
  }

  /**
   * The application cancels while the first attempt's fast reject is being handled, before it has
   * half-closed: its call still ends, once. The cancel is made from inside the retry budget's
   * check, the moment another thread's cancel can land between the reject's look at the call and
   * its keeping the reject for the half-close.
   */
  @Test
  void aCancelThatRacesAnEarlyRejectStillEndsTheCall() {
    List<FakeCall> attempts = new java.util.ArrayList<>();
    ReplicaRetryingCall<String, String, String>[] call = newRetrying(attempts, () ->
        Boolean.TRUE);
    Recorder app = new Recorder();
    call[0].start(app, new Metadata());
    call[0].request(1);
    call[0].sendMessage("x");
    // the budget is asked; meanwhile the application gives up
    Supplier<Boolean> budget = () -> {
      call[0].cancel("gave up", null);
      return true;
    };
    tryRetry = budget;
    Metadata trailers = new Metadata();
    trailers.put(SpillwayMetadata.STATUS, "1"); // REJECTED_AQM: a fast reject
    attempts.get(0).listener.onClose(Status.RESOURCE_EXHAUSTED, trailers);
    assertEquals(1, app.closes.size(), "the cancelled call never ended: " + app.closes);
    assertEquals(1, attempts.size(), "nothing is sent after the cancel");
  }

  private Supplier<Boolean> tryRetry;

  @SuppressWarnings("unchecked")
  private ReplicaRetryingCall<String, String, String>[] newRetrying(List<FakeCall> attempts,
      Supplier<Boolean> initialBudget) {
    tryRetry = initialBudget;
    ReplicaRetryingCall.Backends<String> backends = new ReplicaRetryingCall.Backends<>() {
      @Override
      public String other(String avoid) {
        return avoid.equals("a") ? "b" : "a";
      }

      @Override
      @SuppressWarnings("unchecked")
      public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(String backend,
          MethodDescriptor<ReqT, RespT> method, CallOptions options) {
        FakeCall c = new FakeCall(backend);
        attempts.add(c);
        return (ClientCall<ReqT, RespT>) c;
      }

      @Override
      public boolean tryRetry() {
        return tryRetry.get();
      }

      @Override
      public void retried() { }
    };
    return new ReplicaRetryingCall[] {
        new ReplicaRetryingCall<>(backends, Echo.UNARY, CallOptions.DEFAULT, "a")};
  }

  /** An attempt that records what it is asked and keeps its listener for the test to answer. */
  static final class FakeCall extends ClientCall<String, String> {
    final String backend;
    Listener<String> listener;
    final List<String> ops = new java.util.ArrayList<>();

    FakeCall(String backend) {
      this.backend = backend;
    }

    @Override
    public void start(Listener<String> l, Metadata headers) {
      listener = l;
      ops.add("start");
    }

    @Override
    public void request(int n) {
      ops.add("request");
    }

    @Override
    public void cancel(String message, Throwable cause) {
      ops.add("cancel");
    }

    @Override
    public void halfClose() {
      ops.add("halfClose");
    }

    @Override
    public void sendMessage(String message) {
      ops.add("send");
    }
  }

  /** The application's listener: records how its call closed. */
  static final class Recorder extends ClientCall.Listener<String> {
    final List<Status> closes = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public void onClose(Status status, Metadata trailers) {
      closes.add(status);
    }
  }
}
