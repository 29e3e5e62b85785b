package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.ControlChannel;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayProperties;
import jakarta.servlet.DispatcherType;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * An asynchronous request (a {@code DeferredResult}, a {@code Callable}) whose answer, written in
 * the async re-dispatch, is a budget abort: the abort is a fast reject there too, and the permit
 * ends aborted (virtual time).
 */
class ServletAsyncAbortTest {

  private static final long MS = 1_000_000;
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private final GateStats stats = new GateStats("default");
  private SpillwayHttpGate gate;

  private SpillwayServletFilter filter() {
    ServerGate g = Spillway.forSlo(Duration.ofMillis(100)).newServerGate(new ServerEnvironment(
        clock, clock, QueueDelaySignal.NONE, ControlChannel.DISCARD, stats, 2));
    gate = new SpillwayHttpGate(clock, QueueDelaySignal.NONE,
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 100 * MS, 20 * MS, stats, true),
        List.of(), List.of(), SpillwayProperties.NoBudget.UNLIMITED, false, 1);
    return new SpillwayServletFilter(gate, null, null, null,
        SpillwayProperties.DEFAULT_REJECT_STATUS);
  }

  /**
   * A session's request: the abort its async re-dispatch throws (Spring MVC's resolver hands it
   * on out of the dispatcher, to the filter) ends its permit as aborted, not failed, and is
   * answered as the reject it is, with the budget status and the pushback.
   */
  @Test
  void aSessionsAsyncAnswerThatAbortsOnItsBudgetIsAFastReject() throws Exception {
    SpillwayServletFilter f = filter();
    MockHttpServletRequest request = new MockHttpServletRequest("GET", "/x");
    request.setAsyncSupported(true);
    request.addHeader(SpillwayHttpHeaders.SESSION, "7");
    request.addHeader(SpillwayHttpHeaders.FLAGS, "1"); // registers
    MockHttpServletResponse response = new MockHttpServletResponse();
    f.doFilter(request, response, (req, res) -> req.startAsync(req, res));
    assertThat(gate.inFlight()).isOne();

    clock.advance(5 * MS);
    request.setDispatcherType(DispatcherType.ASYNC);
    request.setAsyncStarted(false);
    f.doFilter(request, response, (req, res) -> {
      throw new BudgetExceededException(30 * MS, 2 * MS);
    });

    assertThat(gate.inFlight()).isZero();
    assertThat(stats.completions(Outcome.ABORTED)).as("aborted").isOne();
    assertThat(stats.completions(Outcome.FAILED)).as("failed").isZero();
    assertThat(response.getStatus()).isEqualTo(SpillwayProperties.DEFAULT_REJECT_STATUS);
    assertThat(response.getHeader(SpillwayHttpHeaders.STATUS))
        .isEqualTo(Integer.toString(Status.REJECTED_BUDGET.code()));
    assertThat(response.getHeader(SpillwayHttpHeaders.RETRY_PUSHBACK_MS)).isNotNull();
  }

  /** A plain client's request, the same: its async answer's abort is a fast reject. */
  @Test
  void aPlainAsyncAnswerThatAbortsOnItsBudgetIsAFastReject() throws Exception {
    SpillwayServletFilter f = filter();
    MockHttpServletRequest request = new MockHttpServletRequest("GET", "/x");
    request.setAsyncSupported(true);
    MockHttpServletResponse response = new MockHttpServletResponse();
    f.doFilter(request, response, (req, res) -> req.startAsync(req, res));
    assertThat(gate.inFlight()).isOne();

    clock.advance(5 * MS);
    request.setDispatcherType(DispatcherType.ASYNC);
    request.setAsyncStarted(false);
    f.doFilter(request, response, (req, res) -> {
      throw new BudgetExceededException(30 * MS, 2 * MS);
    });
    request.getAsyncContext().complete(); // the container completes the request after it

    assertThat(gate.inFlight()).isZero();
    assertThat(stats.completions(Outcome.ABORTED)).as("aborted").isOne();
    assertThat(response.getStatus()).isEqualTo(SpillwayProperties.DEFAULT_REJECT_STATUS);
    assertThat(response.getHeader(SpillwayHttpHeaders.STATUS))
        .isEqualTo(Integer.toString(Status.REJECTED_BUDGET.code()));
    assertThat(response.getHeader(SpillwayHttpHeaders.RETRY_PUSHBACK_MS)).isNotNull();
  }
}
