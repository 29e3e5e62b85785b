package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.Outcome;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayProperties;
import jakarta.servlet.DispatcherType;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * An asynchronous request (a {@code DeferredResult}, a {@code Callable}) whose answer, written in
 * the async re-dispatch, is a budget abort: the abort is a fast reject there too, and the permit
 * ends aborted (virtual time).
 */
class ServletAsyncAbortTest {

  private static final long MS = VirtualTimeServletFilter.MS;
  private final VirtualTimeServletFilter fixture = new VirtualTimeServletFilter();
  private final VirtualClock clock = fixture.clock;
  private final GateStats stats = fixture.stats;
  private final SpillwayHttpGate gate = fixture.gate;

  private SpillwayServletFilter filter() {
    return fixture.filter;
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
    startsAsyncThenAbortsInTheRedispatch(f, request, response);

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
    startsAsyncThenAbortsInTheRedispatch(f, request, response);
    request.getAsyncContext().complete(); // the container completes the request after it

    assertThat(gate.inFlight()).isZero();
    assertThat(stats.completions(Outcome.ABORTED)).as("aborted").isOne();
    assertThat(response.getStatus()).isEqualTo(SpillwayProperties.DEFAULT_REJECT_STATUS);
    assertThat(response.getHeader(SpillwayHttpHeaders.STATUS))
        .isEqualTo(Integer.toString(Status.REJECTED_BUDGET.code()));
    assertThat(response.getHeader(SpillwayHttpHeaders.RETRY_PUSHBACK_MS)).isNotNull();
  }

  /**
   * The request dispatch starts async processing; 5 ms later the async re-dispatch throws a
   * budget abort, as Spring MVC's resolver hands it on to the filter.
   */
  private void startsAsyncThenAbortsInTheRedispatch(SpillwayServletFilter f,
      MockHttpServletRequest request, MockHttpServletResponse response) throws Exception {
    f.doFilter(request, response, (req, res) -> req.startAsync(req, res));
    assertThat(gate.inFlight()).isOne();

    clock.advance(5 * MS);
    request.setDispatcherType(DispatcherType.ASYNC);
    request.setAsyncStarted(false);
    f.doFilter(request, response, (req, res) -> {
      throw new BudgetExceededException(30 * MS, 2 * MS);
    });
  }
}
