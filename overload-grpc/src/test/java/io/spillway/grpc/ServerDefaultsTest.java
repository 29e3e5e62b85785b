package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.api.testing.VirtualClock;
import io.spillway.asqm.BudgetedLock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a server gets from {@code SpillwayGrpc.server().slo(..).install(builder)} with no other
 * wiring: plain clients limited and told when to come back, budgets from deadlines or the SLO, and
 * a clear failure where protection would otherwise be off. The server's clock is virtual; gRPC's
 * own deadlines run on the real clock, with margins of seconds.
 */
class ServerDefaultsTest {

  private static final long MS = 1_000_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 60_000 * MS);
  private Server server;
  private ManagedChannel channel;
  private SpillwayGrpcServer spillway;
  private ExecutorService workers;

  private Channel start(Echo.Handler handler, int parallelism) throws Exception {
    return start(handler, parallelism, null);
  }

  private Channel start(Echo.Handler handler, int parallelism, io.grpc.ServerInterceptor outer)
      throws Exception {
    return start(handler, parallelism, outer, null);
  }

  /** With {@code oneWorker}, admitted calls run on one thread, so a call waits while another runs. */
  private Channel start(Echo.Handler handler, int parallelism, io.grpc.ServerInterceptor outer,
      ExecutorService oneWorker) throws Exception {
    return start(handler, SpillwayGrpc.server().sloMillis(5), parallelism, outer, oneWorker);
  }

  private Channel start(Echo.Handler handler, SpillwayGrpcServer.Builder b, int parallelism,
      io.grpc.ServerInterceptor outer, ExecutorService oneWorker) throws Exception {
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service(handler));
    b.ticker(clock).scheduler(clock).parallelism(parallelism);
    if (oneWorker != null) {
      workers = oneWorker;
      b.executor(oneWorker, io.spillway.api.QueueDelaySignal.NONE);
    }
    spillway = b.install(builder);
    if (outer != null) {
      builder.intercept(outer); // added last: runs before Spillway's interceptor
    }
    server = builder.build().start();
    channel = InProcessChannelBuilder.forName(name).build();
    return channel;
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (spillway != null) {
      spillway.close();
    }
    if (workers != null) {
      workers.shutdownNow();
    }
  }

  private static Channel withDeadline(Channel channel, long millis) {
    return ClientInterceptors.intercept(channel, new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
          Channel next) {
        return next.newCall(method, options.withDeadlineAfter(millis, TimeUnit.MILLISECONDS));
      }
    });
  }

  @Test
  void buildWithoutADelaySignalFailsAndSaysHowToGiveOne() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> SpillwayGrpc.server(Breakwater.of(BreakwaterConfig.forSlo(5 * MS, MS))).build());
    assertTrue(e.getMessage().contains("install(serverBuilder)"), e.getMessage());
    assertTrue(e.getMessage().contains("queueDelay(signal)"), e.getMessage());
    assertThrows(IllegalStateException.class,
        () -> SpillwayGrpc.server().install(InProcessServerBuilder.forName("x")));
  }

  /** The plain clients' limit as the gate last reported it, where a test records it. */
  private final AtomicLong plainLimit = new AtomicLong(-1);
  private final io.spillway.api.OverloadMetrics limitRecorder = new io.spillway.api.OverloadMetrics() {
    @Override
    public void onConcurrencyLimit(long limit, long counted) {
      plainLimit.set(limit);
    }
  };
  private final CountDownLatch warmHeld = new CountDownLatch(1);
  private final CountDownLatch warmRelease = new CountDownLatch(1);

  /** Serves {@link #measureTheQueue}'s calls; false for any other call. */
  private boolean warm(String request, io.grpc.stub.StreamObserver<String> out) {
    if (!request.startsWith("warm")) {
      return false;
    }
    if (request.equals("warm-hold")) {
      warmHeld.countDown();
      try {
        warmRelease.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    out.onNext("warm");
    out.onCompleted();
    return true;
  }

  /**
   * Gives the plain clients' limit its first measurement, as a server's first queue does
   * (DelayLimitGate, "Before the first measurement"): with the one worker held, two calls wait
   * 100 ms of the virtual clock, and the second is a drain-rate sample as it starts. A period
   * later, the next admission updates the limit. Returns once all three have completed.
   */
  private void measureTheQueue(Channel ch) throws Exception {
    Calls.Handle hold = Calls.unary(ch, Echo.UNARY, "warm-hold");
    assertTrue(warmHeld.await(10, TimeUnit.SECONDS));
    Calls.Handle b = Calls.unary(ch, Echo.UNARY, "warm-b");
    Calls.Handle c = Calls.unary(ch, Echo.UNARY, "warm-c");
    assertEquals(2, awaitUndecided(2), "both admitted, waiting for the worker");
    clock.advance(100 * MS);
    warmRelease.countDown();
    for (Calls.Handle h : List.of(hold, b, c)) {
      assertEquals(Status.Code.OK, h.await().status().getCode());
    }
    clock.advance(10 * MS);
  }

  /** Sends {@code n} calls that wait for the held worker, and returns them once all are admitted. */
  private List<Calls.Handle> fillTheQueue(Channel ch, long n) {
    List<Calls.Handle> waiting = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      waiting.add(Calls.unary(ch, Echo.UNARY, "w" + i));
    }
    assertEquals(n, awaitUndecided((int) n), "each waits for the worker, admitted");
    return waiting;
  }

  /**
   * A cached pool whose threads start no task until {@code open} counts down: every call of a burst
   * is admitted, and waits to run, before any handler has one.
   */
  private static ExecutorService heldUntil(CountDownLatch open) {
    return new java.util.concurrent.ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
        new java.util.concurrent.SynchronousQueue<>()) {
      @Override
      protected void beforeExecute(Thread thread, Runnable task) {
        try {
          open.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          thread.interrupt();
        }
      }
    };
  }

  @Test
  void aFreshServerAdmitsABurstOfBlockingCallsWhileItsWorkersAreIdle() throws Exception {
    CountDownLatch running = new CountDownLatch(40);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch open = new CountDownLatch(1);
    Channel ch = start((method, request, out) -> {
      running.countDown();
      try {
        release.await(10, TimeUnit.SECONDS); // a downstream call, say
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      out.onNext("done:" + request);
      out.onCompleted();
    }, SpillwayGrpc.server().sloMillis(5), 2, null, heldUntil(open));
    List<Calls.Handle> burst = new java.util.ArrayList<>();
    for (int i = 0; i < 40; i++) {
      burst.add(Calls.unary(ch, Echo.UNARY, "c" + i));
    }
    // Forty waiting to run, twenty times the parallelism, on a server that has measured nothing:
    // none is refused (DelayLimitGate, "Before the first measurement").
    assertEquals(40, awaitUndecided(40), "every call of the burst admitted");
    open.countDown();
    assertTrue(running.await(10, TimeUnit.SECONDS), "forty handlers block at once");
    release.countDown();
    for (int i = 0; i < 40; i++) {
      assertEquals("done:c" + i, burst.get(i).await().body());
    }
  }

  @Test
  void plainCallsBeyondTheLimitAreRefusedWithAPushback() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    Channel ch = start((method, request, out) -> {
      if (warm(request, out)) {
        return;
      }
      started.countDown();
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      out.onNext("done:" + request);
      out.onCompleted();
    }, SpillwayGrpc.server().sloMillis(5).metrics(limitRecorder), 1, null,
        Executors.newSingleThreadExecutor());
    measureTheQueue(ch);
    Calls.Handle first = Calls.unary(ch, Echo.UNARY, "a"); // holds the one worker
    assertTrue(started.await(10, TimeUnit.SECONDS));
    long limit = plainLimit.get(); // updated by the first call's admission, a period on
    assertTrue(limit >= 1 && limit <= 4, "a slow queue's limit: " + limit);
    List<Calls.Handle> waiting = fillTheQueue(ch, limit); // the calls the limit lets wait
    Calls.Reply refused = Calls.unary(ch, Echo.UNARY, "b").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode());
    assertEquals("spillway: rejected (limit)", refused.status().getDescription());
    assertEquals("5", refused.trailer(SpillwayMetadata.STATUS));
    assertNotNull(refused.trailer(SpillwayServerInterceptor.RETRY_PUSHBACK_MS));
    assertTrue(Long.parseLong(refused.trailer(SpillwayServerInterceptor.RETRY_PUSHBACK_MS)) >= 1);
    release.countDown();
    Calls.Reply ok = first.await();
    assertEquals(Status.Code.OK, ok.status().getCode(), ok.toString());
    assertEquals("done:a", ok.body());
    for (int i = 0; i < waiting.size(); i++) {
      assertEquals("done:w" + i, waiting.get(i).await().body());
    }
    assertEquals(0, spillway.interceptor().undecidedCalls(), "every decision was claimed");
  }

  @Test
  void aCallEndedByAnOuterInterceptorGivesItsDecisionBack() throws Exception {
    io.grpc.Metadata.Key<String> auth =
        io.grpc.Metadata.Key.of("auth", io.grpc.Metadata.ASCII_STRING_MARSHALLER);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch holding = new CountDownLatch(1);
    io.grpc.ServerInterceptor outer = new io.grpc.ServerInterceptor() {
      @Override
      public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, R> call,
          io.grpc.Metadata headers, io.grpc.ServerCallHandler<Q, R> next) {
        if ("no".equals(headers.get(auth))) {
          call.close(Status.UNAUTHENTICATED, new io.grpc.Metadata());
          return new io.grpc.ServerCall.Listener<>() { };
        }
        return next.startCall(call, headers);
      }
    };
    Channel ch = start((method, request, out) -> {
      if (warm(request, out)) {
        return;
      }
      if (request.equals("hold")) { // holds the one worker
        holding.countDown();
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      Echo.ECHO.handle(method, request, out);
    }, SpillwayGrpc.server().sloMillis(5).metrics(limitRecorder), 1, outer,
        Executors.newSingleThreadExecutor());
    measureTheQueue(ch);
    Calls.Handle held = Calls.unary(ch, Echo.UNARY, "hold");
    assertTrue(holding.await(10, TimeUnit.SECONDS));
    long limit = plainLimit.get();
    assertTrue(limit >= 1 && limit <= 4, "a slow queue's limit: " + limit);
    // These wait for the worker and fill the limit, so the calls below are refused by it; their
    // own decisions are held until the worker reaches their interceptCall
    List<Calls.Handle> waiting = fillTheQueue(ch, limit);
    for (int i = 0; i < 5; i++) { // refused by Spillway on arrival, then closed by the outer one
      assertEquals(Status.Code.UNAUTHENTICATED,
          Calls.unary(ch, Echo.UNARY, Calls.headers(auth, "no"), "x").await().status().getCode());
    }
    assertEquals(limit, awaitUndecided((int) limit), "every refused call's decision was given back");
    release.countDown();
    assertEquals(Status.Code.OK, held.await().status().getCode());
    for (Calls.Handle h : waiting) {
      assertEquals(Status.Code.OK, h.await().status().getCode());
    }
    assertEquals(0, awaitUndecided(0), "no decision is left behind");
    Calls.Reply ok = Calls.unary(ch, Echo.UNARY, "y").await();
    assertEquals(Status.Code.OK, ok.status().getCode(), "the one slot was given back: " + ok);
  }

  /**
   * An interceptor outside Spillway's that hands the call on with a copy of its headers (an auth
   * or tracing interceptor adding a header, say): the call is still admitted once, on the
   * decision made as it arrived.
   */
  @Test
  void aCallWhoseHeadersAnOuterInterceptorCopiedIsAdmittedOnce() throws Exception {
    java.util.concurrent.atomic.AtomicReference<io.spillway.api.testing.LeakCheckingServerGate>
        checker = new java.util.concurrent.atomic.AtomicReference<>();
    io.grpc.Metadata.Key<String> traced =
        io.grpc.Metadata.Key.of("traced", io.grpc.Metadata.ASCII_STRING_MARSHALLER);
    io.grpc.ServerInterceptor copying = new io.grpc.ServerInterceptor() {
      @Override
      public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, R> call,
          io.grpc.Metadata headers, io.grpc.ServerCallHandler<Q, R> next) {
        io.grpc.Metadata copy = new io.grpc.Metadata();
        copy.merge(headers);
        copy.put(traced, "yes");
        return next.startCall(new io.grpc.ForwardingServerCall.SimpleForwardingServerCall<>(call) { },
            copy);
      }
    };
    Channel ch = start(Echo.ECHO, SpillwayGrpc.server(io.spillway.api.testing.LeakCheckingServerGate
        .checking(io.spillway.credit.Spillway.forSloNanos(5 * MS), checker::set)).sloMillis(5), 2,
        copying, null);
    java.util.List<String> refused = new java.util.ArrayList<>();
    for (int i = 0; i < 10; i++) {
      Calls.Reply reply = Calls.unary(ch, Echo.UNARY, "x" + i).await();
      if (!reply.status().isOk()) {
        refused.add(i + ": " + reply.status().getDescription());
      }
    }
    assertEquals(0, awaitUndecided(0), "every decision was claimed");
    assertEquals("10 permits, refused []", checker.get().issued() + " permits, refused " + refused,
        "10 calls, one at a time, on a limit of 2");
    checker.get().assertNoLeaks();
  }

  /** Waits (liveness only) until {@code n} decisions are unclaimed; returns how many are. */
  private int awaitUndecided(int n) {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (spillway.interceptor().undecidedCalls() != n && System.nanoTime() < until) {
      Thread.yield(); // the listeners run as the calls' contexts end; nothing is timed
    }
    return spillway.interceptor().undecidedCalls();
  }

  @Test
  void aPushbackFollowsTheQueueingDelay() {
    SpillwayServerInterceptor interceptor = SpillwayGrpc.server().sloMillis(5).ticker(clock)
        .scheduler(clock).queueDelay(now -> 7_300_000).build().interceptor();
    io.grpc.Metadata trailers = new io.grpc.Metadata();
    interceptor.addPushback(trailers, clock.read());
    assertEquals("8", trailers.get(SpillwayServerInterceptor.RETRY_PUSHBACK_MS), "7.3 ms, rounded up");
  }

  @Test
  void aCallWithoutADeadlineGetsTheSloLessTheP99ServiceTime() throws Exception {
    AtomicLong seen = new AtomicLong(-1);
    Channel ch = start((method, request, out) -> {
      seen.set(RequestBudget.currentOrNull().remainingNanos());
      clock.advance(Long.parseLong(request) * MS); // the handler's service time, in virtual time
      out.onNext("ok");
      out.onCompleted();
    }, 1);
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "1").await().status().getCode());
    assertEquals(5 * MS, seen.get(), "no samples yet: the whole SLO");
    assertEquals(MS, spillway.interceptor().p99ServiceNanos(), "the first sample is the estimate");
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "0").await().status().getCode());
    assertEquals(4 * MS, seen.get(), "SLO 5 ms less the 1 ms p99");
  }

  /**
   * A handler's wait for a budgeted lock (what it charges its budget) is queueing: it stays out of
   * the p99 service time that later calls' budgets are set from (protego-nsdi23 §3.2).
   */
  @Test
  void waitsChargedToTheBudgetAreNotServiceTime() throws Exception {
    AtomicLong seen = new AtomicLong(-1);
    Channel ch = start((method, request, out) -> {
      RequestBudget budget = RequestBudget.currentOrNull();
      seen.set(budget.remainingNanos());
      clock.advance(3 * MS); // waits 3 ms for a lock, as BudgetedLock charges it
      budget.charge(3 * MS);
      clock.advance(MS); // then computes for 1 ms
      out.onNext("ok");
      out.onCompleted();
    }, 1);
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "x").await().status().getCode());
    assertEquals(MS, spillway.interceptor().p99ServiceNanos(),
        "4 ms in the handler, 3 of it queued");
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "x").await().status().getCode());
    assertEquals(4 * MS, seen.get(), "SLO 5 ms less the 1 ms p99");
  }

  @Test
  void aDeadlineThatCannotBeMetIsRefusedBeforeTheHandler() throws Exception {
    AtomicLong runs = new AtomicLong();
    Channel ch = start((method, request, out) -> {
      runs.incrementAndGet();
      clock.advance(Long.parseLong(request) * MS);
      out.onNext("ok");
      out.onCompleted();
    }, 1);
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "5000").await().status().getCode());
    assertEquals(5_000 * MS, spillway.interceptor().p99ServiceNanos());
    Calls.Reply refused = Calls.unary(withDeadline(ch, 2_000), Echo.UNARY, "0").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(), refused.toString());
    assertEquals("4", refused.trailer(SpillwayMetadata.STATUS), "REJECTED_BUDGET");
    assertEquals(1, runs.get(), "the handler never ran");
    Calls.Reply served = Calls.unary(withDeadline(ch, 60_000), Echo.UNARY, "0").await();
    assertEquals(Status.Code.OK, served.status().getCode(),
        "a 60 s deadline can be met; its budget is the SLO's, used up by the p99; no lock asks");
  }

  /**
   * A call refused for a deadline it cannot meet is counted as the gate counts its own refusals:
   * a refusal by reason, and a completion as dropped, as every refused permit ends.
   */
  @Test
  void aRefusalForAnUnmeetableDeadlineReachesTheMetrics() throws Exception {
    java.util.List<io.spillway.api.Status> decisions = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.List<io.spillway.api.Outcome> completions = new java.util.concurrent.CopyOnWriteArrayList<>();
    io.spillway.api.OverloadMetrics recording = new io.spillway.api.OverloadMetrics() {
      @Override
      public void onAdmission(io.spillway.api.Status decision) {
        decisions.add(decision);
      }

      @Override
      public void onCompletion(io.spillway.api.Outcome outcome) {
        completions.add(outcome);
      }
    };
    Channel ch = start((method, request, out) -> {
      clock.advance(Long.parseLong(request) * MS);
      out.onNext("ok");
      out.onCompleted();
    }, SpillwayGrpc.server().sloMillis(5).metrics(recording), 1, null, null);
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "5000").await().status().getCode());
    Calls.Reply refused = Calls.unary(withDeadline(ch, 2_000), Echo.UNARY, "0").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(), refused.toString());
    assertTrue(decisions.contains(io.spillway.api.Status.REJECTED_BUDGET), decisions.toString());
    assertEquals(java.util.List.of(io.spillway.api.Status.OK, io.spillway.api.Status.REJECTED_BUDGET),
        decisions);
    assertEquals(java.util.List.of(io.spillway.api.Outcome.SUCCESS, io.spillway.api.Outcome.DROPPED),
        completions, "every decision ends in one completion");
  }

  /**
   * A client's {@code spillway-budget-ns} header is its claim, not the server's promise: the
   * budget is the nearest of the header's, the deadline's and the SLO's (each less the p99
   * service time, Protego §3.2), and a call whose deadline cannot be met is refused before the
   * handler, whatever budget its header claims.
   */
  @Test
  void aHeaderBudgetIsCappedByTheSloAndItsDeadline() throws Exception {
    AtomicLong seen = new AtomicLong(-1);
    AtomicLong runs = new AtomicLong();
    Channel ch = start((method, request, out) -> {
      runs.incrementAndGet();
      seen.set(RequestBudget.currentOrNull().remainingNanos());
      clock.advance(Long.parseLong(request) * MS);
      out.onNext("ok");
      out.onCompleted();
    }, 1);
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "1").await().status().getCode());
    long anHour = 3_600_000 * MS;
    Calls.Reply claimed = Calls.unary(ch, Echo.UNARY,
        Calls.headers(SpillwayMetadata.BUDGET, anHour), "0").await();
    assertEquals(Status.Code.OK, claimed.status().getCode(), claimed.toString());
    assertEquals(4 * MS, seen.get(), "an hour claimed; the SLO 5 ms less the 1 ms p99 given");
    Calls.unary(ch, Echo.UNARY, Calls.headers(SpillwayMetadata.BUDGET, 2 * MS), "0").await();
    assertEquals(2 * MS, seen.get(), "a header's budget nearer than the SLO's is kept");

    clock.advance(10 * MS); // idle for longer than the p99: the next call's sample restarts it
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "5000").await().status().getCode());
    long before = runs.get();
    Calls.Reply refused = Calls.unary(withDeadline(ch, 2_000), Echo.UNARY,
        Calls.headers(SpillwayMetadata.BUDGET, anHour), "0").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(),
        "a 2 s deadline cannot cover the 5 s p99, whatever the header claims: " + refused);
    assertEquals("4", refused.trailer(SpillwayMetadata.STATUS), "REJECTED_BUDGET");
    assertEquals(before, runs.get(), "the handler never ran");
  }

  /**
   * At low load the server idles between calls for longer than a call takes; that idleness says
   * nothing about how long calls take, so a deadline shorter than the p99 is still refused.
   */
  @Test
  void aDeadlineThatCannotBeMetIsRefusedAfterTheServerIdledLongerThanACall() throws Exception {
    AtomicLong runs = new AtomicLong();
    Channel ch = start((method, request, out) -> {
      runs.incrementAndGet();
      clock.advance(Long.parseLong(request) * MS);
      out.onNext("ok");
      out.onCompleted();
    }, 1);
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "30").await().status().getCode());
    clock.advance(50 * MS); // the next call comes 50 ms later: a third of capacity, one at a time
    Calls.Reply refused = Calls.unary(withDeadline(ch, 20), Echo.UNARY, "0").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(), refused.toString());
    assertEquals("4", refused.trailer(SpillwayMetadata.STATUS), "REJECTED_BUDGET");
    assertEquals(1, runs.get(), "the handler never ran");
  }

  /**
   * A call its client cancels ends its permit while the handler still works; the time until the
   * cancel is not its service time, and only the handler's own end gives one.
   */
  @Test
  void aCancelledCallGivesTheP99ItsHandlersTimeNotTheTimeUntilTheCancel() throws Exception {
    java.util.concurrent.CountDownLatch working = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch heard = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch cancelled = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    Channel ch = start((method, request, out) -> {
      if (request.equals("wait")) {
        // an asynchronous handler: it returns at once and answers from its own thread, so the
        // cancel reaches the call while the work goes on
        clock.advance(MS);
        Thread.ofPlatform().start(() -> {
          try {
            cancelled.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          clock.advance(29 * MS);
          out.onNext("ok");
          out.onCompleted();
          done.countDown();
        });
        working.countDown();
        return;
      }
      clock.advance(Long.parseLong(request) * MS);
      out.onNext("ok");
      out.onCompleted();
    }, 1, new io.grpc.ServerInterceptor() { // outside Spillway's: hears the cancel after it
      @Override
      public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, R> call,
          io.grpc.Metadata headers,
          io.grpc.ServerCallHandler<Q, R> next) {
        return new io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
            next.startCall(call, headers)) {
          @Override
          public void onCancel() {
            super.onCancel();
            heard.countDown();
          }
        };
      }
    });
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "30").await().status().getCode());
    clock.advance(40 * MS); // idle for longer than a call: a sample then restarts the estimate
    Calls.Handle call = Calls.unary(ch, Echo.UNARY, "wait");
    assertTrue(working.await(10, TimeUnit.SECONDS), "the handler has run its first millisecond");
    call.call().cancel("the client gives up", null);
    assertEquals(Status.Code.CANCELLED, call.await().status().getCode());
    assertTrue(heard.await(10, TimeUnit.SECONDS), "the server has heard of the cancel");
    cancelled.countDown();
    assertTrue(done.await(10, TimeUnit.SECONDS));
    assertTrue(spillway.interceptor().p99ServiceNanos() >= 29 * MS,
        "the handler took 30 ms; p99 " + spillway.interceptor().p99ServiceNanos());
  }

  @Test
  void aStaleP99DoesNotRefuseEveryCallForGood() throws Exception {
    Channel ch = start((method, request, out) -> {
      clock.advance(Long.parseLong(request) * MS);
      out.onNext("ok");
      out.onCompleted();
    }, 1);
    // one call held for 5 s (a refresh holding a lock, say): the p99 estimate jumps to 5 s
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "5000").await().status().getCode());
    Calls.Reply refused = Calls.unary(withDeadline(ch, 2_000), Echo.UNARY, "0").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(), refused.toString());
    // refused calls feed the estimate nothing; 20 s later it has decayed, and calls run again
    clock.advance(20_000 * MS);
    assertTrue(spillway.interceptor().p99ServiceNanos() < 2_000 * MS,
        "p99 " + spillway.interceptor().p99ServiceNanos());
    Calls.Reply served = Calls.unary(withDeadline(ch, 2_000), Echo.UNARY, "0").await();
    assertEquals(Status.Code.OK, served.status().getCode(), served.toString());
  }

  @Test
  void aBudgetedLockRefusesAPlainClientWhoseLooseDeadlineWouldLetItWaitPastTheSlo()
      throws Exception {
    BudgetedLock lock = new BudgetedLock(clock);
    Channel ch = start((method, request, out) -> {
      try (var held = lock.acquireWithinBudget()) {
        out.onNext("locked");
        out.onCompleted();
      }
    }, 2);
    Thread waiter = holdWithAWaiter(lock, 30 * MS);
    try {
      Calls.Reply refused = Calls.unary(withDeadline(ch, 10_000), Echo.UNARY, "x").await();
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(),
          "a 10 s deadline would wait; the 5 ms SLO bounds the budget: " + refused);
      assertEquals("spillway: rejected (budget)", refused.status().getDescription());
    } finally { // a call that queued instead gets the lock, so the server can stop
      lock.unlock();
      waiter.join();
    }
    Calls.Reply served = Calls.unary(withDeadline(ch, 10_000), Echo.UNARY, "y").await();
    assertEquals(Status.Code.OK, served.status().getCode(), "an idle lock fits any budget");
  }

  /**
   * The test thread holds {@code lock} and another thread has queued behind it for {@code
   * waitNanos} of virtual time; returns that thread, which ends once the lock is given up.
   */
  private Thread holdWithAWaiter(BudgetedLock lock, long waitNanos) {
    lock.lock();
    Thread waiter = Thread.ofPlatform().start(() -> {
      lock.lock();
      lock.unlock();
    });
    while (lock.waiters() == 0) {
      Thread.onSpinWait();
    }
    clock.advance(waitNanos);
    return waiter;
  }

  @Test
  void aBudgetedLockRefusesAPlainClientWhoseDeadlineItCannotMeet() throws Exception {
    BudgetedLock lock = new BudgetedLock(clock);
    AtomicReference<String> outcome = new AtomicReference<>();
    // A scheme without an SLO: no server-side target, so the deadline alone sets the budget.
    Channel ch = start((method, request, out) -> {
      try (var held = lock.acquireWithinBudget()) {
        out.onNext("locked");
        out.onCompleted();
      } catch (BudgetExceededException e) {
        outcome.set("refused");
        throw e;
      }
    }, SpillwayGrpc.server(Breakwater.of(BreakwaterConfig.forSlo(5 * MS, MS))), 2, null, null);
    Thread waiter = holdWithAWaiter(lock, 30_000 * MS);
    try {
      Calls.Reply refused = Calls.unary(withDeadline(ch, 10_000), Echo.UNARY, "x").await();
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(), refused.toString());
      assertEquals("spillway: rejected (budget)", refused.status().getDescription());
      assertEquals("refused", outcome.get());
      assertNotNull(refused.trailer(SpillwayServerInterceptor.RETRY_PUSHBACK_MS));
    } finally {
      lock.unlock();
      waiter.join();
    }
    Calls.Reply served = Calls.unary(withDeadline(ch, 10_000), Echo.UNARY, "y").await();
    assertEquals(Status.Code.OK, served.status().getCode(), "an idle lock fits any budget");
  }
}
