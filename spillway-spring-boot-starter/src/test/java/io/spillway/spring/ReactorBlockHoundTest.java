package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Ticker;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.credit.Spillway;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockHound;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * {@link SpillwayReactor#gate} never blocks a non-blocking thread, checked with BlockHound.
 *
 * <p>Runs in a JVM of its own (the surefire execution {@code reactor-blockhound} in this module's
 * pom), installing BlockHound before anything else touches Reactor: in a JVM that had run the rest
 * of the suite, BlockHound's own probes could go unreported, leaving it unproven whether it was
 * watching the operator at all.
 */
class ReactorBlockHoundTest {

  private static boolean isBlockingError(Throwable t) {
    return t != null && t.getClass().getName().contains("BlockingOperationError");
  }

  /** A yield or a microsecond's park on a parallel thread: reported when BlockHound is active. */
  private static Throwable probe(boolean park) {
    AtomicReference<Throwable> seen = new AtomicReference<>();
    Mono.fromCallable(() -> {
      if (park) {
        LockSupport.parkNanos(1_000);
      } else {
        Thread.yield();
      }
      return 1;
    }).subscribeOn(Schedulers.parallel()).doOnError(seen::set).onErrorReturn(0).block();
    return seen.get();
  }

  @Test
  void theOperatorDoesNotBlock() throws InterruptedException {
    BlockHound.install();
    // Both probes must be reported before the operator runs, or a pass below would prove nothing.
    Throwable yielded = probe(false);
    Throwable parked = probe(true);
    assertTrue(isBlockingError(yielded) && isBlockingError(parked),
        "BlockHound is not active: yield -> " + yielded + ", park -> " + parked);

    Ticker ticker = Ticker.system();
    ServerGate real = Spillway.forSlo(Duration.ofMillis(10)).newServerGate(new ServerEnvironment(
        ticker, (task, d) -> () -> { }, QueueDelaySignal.NONE, ControlChannel.DISCARD,
        OverloadMetrics.NONE, 2));
    LeakCheckingServerGate gate = new LeakCheckingServerGate(real);
    Long sum = Flux.range(0, 200)
        .flatMap(i -> Mono.just(i).subscribeOn(Schedulers.parallel())
            .transformDeferred(SpillwayReactor.gate(gate, ticker))
            .contextWrite(SpillwayReactor.withBudget(RequestBudget.of(1_000_000)))
            .onErrorResume(SpillwayRejectedException.class, e -> Mono.empty()))
        .map(Integer::longValue).reduce(0L, Long::sum)
        .subscribeOn(Schedulers.parallel()).block();
    assertTrue(sum != null && sum > 0);
    // doFinally runs just after the terminal signal has gone downstream: the last permit may end
    // a moment after block() returned.
    StarterMvcTest.waitUntil(() -> gate.outstanding() == 0);
    gate.assertNoLeaks();
  }
}
