package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.spring.app.ManualTicker;
import io.spillway.spring.internal.MeasuredQueuedThreadPool;
import io.spillway.spring.internal.ServletStages;
import io.spillway.spring.jetty.JettyTestApp;
import java.net.URI;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.server.Server;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jetty.JettyWebServer;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.context.WebServerApplicationContext;

/**
 * An application on a real Jetty with four threads, one acceptor and one selector: the fewest
 * Jetty starts with, since the acceptor, the selector and one reserved thread are leased from the
 * pool and at least one thread must be left. Requests held in their handler take the threads left
 * (one or two: Jetty turns its reserved thread into a selector or a worker as requests arrive, or
 * keeps it parked), so a further request waits for a worker, and the worker stage reads its wait
 * on a clock the test moves. {@code spillway.scheme=none} keeps the gate from shedding: the
 * subject is the measurement. The pool is read from the running server, so without the
 * customizer the tests fail on its class, not on a missing bean.
 */
@SpringBootTest(classes = JettyTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"server.jetty.threads.max=" + JettyWorkersTest.THREADS,
        "server.jetty.threads.min=" + JettyWorkersTest.THREADS,
        "server.jetty.threads.acceptors=1", "server.jetty.threads.selectors=1",
        "spillway.scheme=none", "management.endpoints.web.exposure.include=spillway"})
class JettyWorkersTest {

  static final int THREADS = 4;

  @LocalServerPort
  int port;
  @Autowired
  WebServerApplicationContext context;
  @Autowired
  ServerQueueDelay delay;
  @Autowired
  ServletStages stages;
  @Autowired
  ManualTicker ticker;


  /** The pool the running Jetty server has, whoever put it there. */
  private MeasuredQueuedThreadPool pool() {
    Server server = assertInstanceOf(JettyWebServer.class, context.getWebServer()).getServer();
    return assertInstanceOf(MeasuredQueuedThreadPool.class, server.getThreadPool(),
        "Jetty's workers are measured");
  }

  @Test
  void theEndpointShowsJettysWorkerStage() throws Exception {
    HttpResponse<String> state = get("/actuator/spillway");
    assertEquals(200, state.statusCode());
    assertTrue(state.body().contains("\"jetty-workers\""), state.body());
    assertTrue(state.body().contains("\"workers\":\"platform pool of " + THREADS
        + " threads, measured\""), state.body());
    assertFalse(state.body().contains("tomcat"), state.body());
    assertTrue(delay.stageNames().contains("jetty-workers"), delay.stageNames().toString());
    assertEquals(THREADS, pool().getMaxThreads());
    assertEquals(THREADS, stages.threads(), "the run slots' ceiling is Jetty's thread count");
  }

  @Test
  void aRequestWaitingForAWorkerIsTheStagesDelay() throws Exception {
    MeasuredQueuedThreadPool pool = pool();
    CountDownLatch hold = new CountDownLatch(1);
    JettyTestApp.HOLD.set(hold);
    JettyTestApp.ENTERED.set(0);
    List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
    CompletableFuture<HttpResponse<String>> waiting = null;
    try {
      waitUntil(() -> pool.unstarted() == 0);
      // Held requests take the threads one at a time until one's job is queued while every
      // thread is the acceptor, the selector, a held handler or a parked reserved thread: none of
      // these takes a queued job while the handlers are held (a parked reserved thread would only
      // after the pool's 60 s idle timeout), so the job waits for a worker. The 2 are the
      // acceptor and the selector.
      while (waiting == null && held.size() < THREADS) {
        CompletableFuture<HttpResponse<String>> next = send("/work?hold=true");
        int entered = held.size() + 1;
        int handlers = held.size();
        waitUntil(() -> JettyTestApp.ENTERED.get() == entered || (pool.unstarted() > 0
            && 2 + handlers + pool.getAvailableReservedThreads() == pool.getThreads()));
        if (JettyTestApp.ENTERED.get() == entered) {
          held.add(next);
        } else {
          waiting = next;
        }
      }
      assertNotNull(waiting, "a request waits once the handlers hold the threads");
      assertTrue(held.size() >= 1 && held.size() <= THREADS - 2,
          held.size() + " handlers ran on " + THREADS + " threads");

      ticker.advanceMillis(250);
      long now = ticker.read();
      // Nothing else moves the clock: the wait is exactly the time the test let pass since the
      // request was handed over.
      assertEquals(TimeUnit.MILLISECONDS.toNanos(250), pool.queueDelay().queueingDelayNanos(now));
      assertTrue(delay.signal().queueingDelayNanos(now) >= TimeUnit.MILLISECONDS.toNanos(250),
          "the server's queueing delay includes the worker stage");
      assertFalse(waiting.isDone(), "the request waits for a worker");
      assertEquals(held.size(), JettyTestApp.ENTERED.get(), "no further handler ran");

      hold.countDown();
      held.add(waiting);
      for (CompletableFuture<HttpResponse<String>> f : held) {
        assertEquals(200, f.get(30, TimeUnit.SECONDS).statusCode());
      }
      waitUntil(() -> pool.unstarted() == 0);
      assertEquals(0, pool.queueDelay().queueingDelayNanos(ticker.read()));
    } finally {
      hold.countDown();
    }
  }

  /** Waits, bounded only against a hang, until {@code condition} holds. */
  private void waitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        MeasuredQueuedThreadPool pool = pool();
        throw new AssertionError("condition not met within 30 s: entered "
            + JettyTestApp.ENTERED.get() + ", " + pool + ", unstarted " + pool.unstarted()
            + ", run slots " + stages.state() + "\n" + dump(pool));
      }
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000); // polls a condition
    }
  }

  private static String dump(MeasuredQueuedThreadPool pool) {
    pool.setDetailedDump(true);
    return pool.dump();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return LocalHttp.get(port, path);
  }

  private CompletableFuture<HttpResponse<String>> send(String path) {
    return LocalHttp.sendAsync(port, path);
  }

  private URI uri(String path) {
    return LocalHttp.uri(port, path);
  }
}
