package io.spillway.spring.app;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring MVC application that only adds the starter: no {@code spillway.*} property, no bean of
 * Spillway's. Its one test hook is the clock: a {@link ManualTicker} bean, which the starter takes
 * instead of the system clock, so its handlers can spend virtual time. It runs on Tomcat: the
 * starter's tests have Jetty on the class path too, and Boot would pick Jetty first.
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.jetty.autoconfigure.servlet.JettyServletWebServerAutoConfiguration")
public class MvcTestApp {

  /** Armed by a test: the next {@code /work?hold=true} waits on it, after counting down entered. */
  public static final AtomicReference<CountDownLatch> HOLD = new AtomicReference<>();
  public static final AtomicReference<CountDownLatch> ENTERED = new AtomicReference<>();

  @Bean
  ManualTicker ticker() {
    return new ManualTicker();
  }

  @RestController
  static class Work {
    private final ManualTicker ticker;

    Work(Ticker ticker) {
      this.ticker = (ManualTicker) ticker;
    }

    /** Spends {@code ms} of virtual time; with {@code hold}, first waits for the test. */
    @GetMapping("/work")
    String work(@RequestParam(name = "ms", defaultValue = "0") long ms,
        @RequestParam(name = "hold", defaultValue = "false") boolean hold) throws InterruptedException {
      if (hold) {
        ENTERED.get().countDown();
        if (!HOLD.get().await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never released the handler");
        }
      }
      ticker.advanceMillis(ms);
      return "ok";
    }

    /** Whether this request runs on a virtual thread. */
    @GetMapping("/virtual")
    boolean virtual() {
      return Thread.currentThread().isVirtual();
    }

    /** The remaining budget bound for this request, -1 if none. */
    @GetMapping("/budget")
    long budget() {
      RequestBudget b = RequestBudget.currentOrNull();
      return b == null ? -1 : b.remainingNanos();
    }

    /**
     * Writes part of its body, sends it first with {@code flush} (committing the response), then
     * fails.
     */
    @GetMapping("/write-then-fail")
    void writeThenFail(jakarta.servlet.http.HttpServletResponse response,
        @RequestParam(name = "flush", defaultValue = "false") boolean flush)
        throws java.io.IOException {
      response.setContentType("text/plain");
      response.getWriter().write("partial");
      if (flush) {
        response.flushBuffer();
      }
      throw new IllegalStateException("failed after writing");
    }

    /** A service layer whose budgeted lock refused the request. */
    @GetMapping("/abort")
    String abort() {
      throw new BudgetExceededException(5_000_000, 1_000_000);
    }
  }
}
