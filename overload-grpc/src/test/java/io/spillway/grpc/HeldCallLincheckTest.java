package io.spillway.grpc;

import io.grpc.ClientCall;
import io.grpc.Metadata;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * Model-checks {@link HeldCall} with Lincheck: while the application sends messages, and may cancel,
 * on one thread (a {@code ClientCall} is used from one thread at a time), another gives the call
 * its real call and replays. In every explored interleaving the real call, once given, receives
 * the start, then the messages the application sent, each once and in the order sent, whether
 * they came before, during or after the replay, and, if the application cancelled, the
 * cancellation last (messages still held then are dropped: a prefix of them arrives); a call
 * never given one receives nothing.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-grpc test -Dtest='HeldCallLincheckTest'}.
 */
class HeldCallLincheckTest {

  @Test
  void theRealCallGetsEveryOperationOnceAndInOrder() {
    new ModelCheckingOptions()
        .iterations(12)
        .invocationsPerIteration(400)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(1)
        .actorsAfter(1)
        .check(Ops.class);
  }

  /** The operations Lincheck runs: the application's sends and a release, from any thread. */
  public static class Ops {
    private final List<String> received = Collections.synchronizedList(new ArrayList<>());
    private final List<String> sent = new ArrayList<>(); // written by the application's group only
    private final HeldCall<Integer, Integer> held = new HeldCall<>(() -> { });
    private volatile boolean released;
    private volatile boolean cancelled;

    public Ops() {
      held.start(new ClientCall.Listener<>() { }, new Metadata());
      sent.add("start");
    }

    @Operation(nonParallelGroup = "application")
    public void send(@Param(gen = IntGen.class, conf = "1:3") int message) {
      if (cancelled) {
        return; // an application sends nothing after cancelling
      }
      synchronized (sent) {
        sent.add("m" + message);
      }
      held.sendMessage(message);
    }

    @Operation(nonParallelGroup = "application")
    public void cancel() {
      if (!cancelled) {
        cancelled = true;
        held.cancel("gave up", null);
      }
    }

    @Operation
    public void release() {
      if (held.claim()) {
        released = true;
        held.drain(new Recording(received));
      }
    }

    @Validate
    public void everyOperationOnceInOrder() {
      List<String> all;
      synchronized (sent) {
        all = List.copyOf(sent);
      }
      List<String> got;
      synchronized (received) {
        got = List.copyOf(received);
      }
      boolean ok;
      if (!released) {
        ok = got.isEmpty();
      } else if (!cancelled) {
        ok = got.equals(all);
      } else {
        // start, a prefix of the messages in order, then the cancellation once, last
        int n = got.size();
        ok = n >= 2 && got.get(n - 1).equals("cancel")
            && got.subList(0, n - 1).equals(all.subList(0, Math.min(n - 1, all.size())))
            && n - 1 <= all.size();
      }
      if (!ok) {
        throw new IllegalStateException("sent " + all + (cancelled ? " then cancelled" : "")
            + (released ? "" : ", never released") + "; the real call got " + got);
      }
    }
  }

  /** A real call that records what reaches it. */
  private static final class Recording extends ClientCall<Integer, Integer> {
    private final List<String> received;

    Recording(List<String> received) {
      this.received = received;
    }

    @Override
    public void start(Listener<Integer> listener, Metadata headers) {
      received.add("start");
    }

    @Override
    public void request(int numMessages) { }

    @Override
    public void cancel(String message, Throwable cause) {
      received.add("cancel");
    }

    @Override
    public void halfClose() {
      received.add("halfClose");
    }

    @Override
    public void sendMessage(Integer message) {
      received.add("m" + message);
    }
  }
}
