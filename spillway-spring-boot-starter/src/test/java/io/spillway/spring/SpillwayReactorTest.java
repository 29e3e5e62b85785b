package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

class SpillwayReactorTest {

  /** A gate that admits everything and reports the budget it was handed. */
  private static final class Recording implements ServerGate {
    final AtomicLong lastBudget = new AtomicLong(-1);
    final ServerGate delegate;

    Recording(ServerGate delegate) {
      this.delegate = delegate;
    }

    @Override
    public ServerPermit admit(RequestMetadata request, long nowNanos) {
      lastBudget.set(request.budgetNanos());
      return delegate.admit(request, nowNanos);
    }

    @Override
    public void deregister(long sessionId, long nowNanos) { }
  }

  private static ServerGate spillwayGate(VirtualClock clock, QueueDelaySignal delay) {
    ServerGate g = Spillway.forSlo(Duration.ofMillis(10)).newServerGate(new ServerEnvironment(
        clock, clock, delay, ControlChannel.DISCARD, OverloadMetrics.NONE, 2));
    g.start();
    return g;
  }

  @Test
  void monoAndFluxEndTheirPermitOnCompletionErrorAndCancel() {
    VirtualClock clock = new VirtualClock();
    LeakCheckingServerGate gate = new LeakCheckingServerGate(spillwayGate(clock, QueueDelaySignal.NONE));
    StepVerifier.create(Mono.just(1).transformDeferred(SpillwayReactor.gate(gate, clock)))
        .expectNext(1).verifyComplete();
    StepVerifier.create(Flux.range(0, 5).transformDeferred(SpillwayReactor.gate(gate, clock)))
        .expectNextCount(5).verifyComplete();
    StepVerifier.create(Mono.error(new BudgetExceededException(2, 1))
        .transformDeferred(SpillwayReactor.gate(gate, clock)))
        .expectError(BudgetExceededException.class).verify();
    StepVerifier.create(Flux.never().transformDeferred(SpillwayReactor.gate(gate, clock)))
        .thenCancel().verify();
    assertEquals(4, gate.admitted());
    gate.assertNoLeaks();
  }

  @Test
  void aRejectedSubscriptionFailsWithoutSubscribingTheSource() {
    VirtualClock clock = new VirtualClock();
    AtomicLong delay = new AtomicLong(Duration.ofSeconds(1).toNanos()); // past the AQM threshold
    LeakCheckingServerGate gate = new LeakCheckingServerGate(spillwayGate(clock, now -> delay.get()));
    AtomicLong subscribed = new AtomicLong();
    Mono<Integer> source = Mono.fromSupplier(() -> (int) subscribed.incrementAndGet());
    StepVerifier.create(source.transformDeferred(SpillwayReactor.gate(gate, clock)))
        .expectErrorSatisfies(e -> {
          SpillwayRejectedException r = assertInstanceOf(SpillwayRejectedException.class, e);
          assertEquals(Status.REJECTED_AQM, r.status());
        }).verify();
    assertEquals(0, subscribed.get());
    gate.assertNoLeaks();
  }

  @Test
  void theBudgetInTheReactorContextReachesTheGate() {
    VirtualClock clock = new VirtualClock();
    Recording gate = new Recording(spillwayGate(clock, QueueDelaySignal.NONE));
    StepVerifier.create(Mono.just("x").transformDeferred(SpillwayReactor.gate(gate, clock))
        .contextWrite(SpillwayReactor.withBudget(RequestBudget.of(1234))))
        .expectNext("x").verifyComplete();
    assertEquals(1234, gate.lastBudget.get());
  }

  /**
   * Many subscriptions whose source completes, fails or is cancelled, often two of those racing
   * on two threads: every admitted permit ends exactly once. Seeded: {@code -Dspillway.seed=N}.
   */
  @Test
  void cancellationAndErrorsEndEachPermitExactlyOnce() throws Exception {
    long seed = Long.getLong("spillway.seed", System.nanoTime());
    System.out.println("SpillwayReactorTest seed: " + seed + " (-Dspillway.seed=" + seed + ")");
    SplittableRandom random = new SplittableRandom(seed);
    VirtualClock clock = new VirtualClock();
    AtomicLong delay = new AtomicLong();
    LeakCheckingServerGate gate = new LeakCheckingServerGate(spillwayGate(clock, now -> delay.get()));
    ExecutorService racers = Executors.newFixedThreadPool(2);
    try {
      int n = 2_000;
      List<Throwable> unexpected = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        delay.set(random.nextInt(10) == 0 ? Duration.ofSeconds(1).toNanos() : 0); // some rejects
        boolean flux = random.nextBoolean();
        Sinks.One<Integer> one = Sinks.one();
        Sinks.Many<Integer> many = Sinks.many().unicast().onBackpressureBuffer();
        Flux<Integer> gated = flux
            ? Flux.from(many.asFlux().transformDeferred(SpillwayReactor.gate(gate, clock)))
            : Flux.from(one.asMono().transformDeferred(SpillwayReactor.gate(gate, clock)));
        Disposable subscription = gated.subscribe(v -> { }, e -> {
          if (!(e instanceof SpillwayRejectedException) && !(e instanceof BudgetExceededException)
              && !(e instanceof IllegalStateException)) {
            synchronized (unexpected) {
              unexpected.add(e);
            }
          }
        });
        Runnable[] ends = {
            () -> { if (flux) { many.tryEmitNext(1); many.tryEmitComplete(); } else { one.tryEmitValue(1); } },
            () -> { if (flux) { many.tryEmitError(new BudgetExceededException(2, 1)); } else { one.tryEmitError(new IllegalStateException("x")); } },
            subscription::dispose,
        };
        Runnable a = ends[random.nextInt(ends.length)];
        Runnable b = ends[random.nextInt(ends.length)];
        if (random.nextBoolean()) {
          CountDownLatch both = new CountDownLatch(2);
          racers.execute(() -> { a.run(); both.countDown(); });
          racers.execute(() -> { b.run(); both.countDown(); });
          assertTrue(both.await(10, TimeUnit.SECONDS));
        } else {
          a.run();
          b.run();
        }
        subscription.dispose(); // whatever is still open ends now
      }
      assertTrue(unexpected.isEmpty(), "unexpected errors: " + unexpected);
      assertTrue(gate.admitted() > 0 && gate.admitted() < n, "admitted " + gate.admitted());
      gate.assertNoLeaks();
    } finally {
      racers.shutdownNow();
    }
  }
}
