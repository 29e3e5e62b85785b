package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpHeaders;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * A session's request answered with a redirect, in virtual time: every way the servlet API has to
 * send one commits the response, so the permit ends before it and the redirect carries the
 * response fields (the credit delta among them) in its headers.
 */
class ServletSessionRedirectTest {

  private static final long MS = VirtualTimeServletFilter.MS;
  private final VirtualTimeServletFilter fixture = new VirtualTimeServletFilter();
  private final VirtualClock clock = fixture.clock;
  private final GateStats stats = fixture.stats;
  private final SpillwayHttpGate gate = fixture.gate;

  private SpillwayServletFilter filter() {
    return fixture.filter;
  }

  private static void redirect(HttpServletResponse response, String how) throws IOException {
    switch (how) {
      case "location" -> response.sendRedirect("/elsewhere");
      case "status" -> response.sendRedirect("/elsewhere", HttpServletResponse.SC_SEE_OTHER);
      case "clear" -> response.sendRedirect("/elsewhere", true);
      case "status-clear" -> response.sendRedirect("/elsewhere", 307, true);
      default -> throw new IllegalArgumentException(how);
    }
  }

  @ParameterizedTest(name = "sendRedirect: {0}")
  @ValueSource(strings = {"location", "status", "clear", "status-clear"})
  void aRedirectCarriesTheSessionsFields(String how) throws Exception {
    SpillwayServletFilter f = filter();
    MockHttpServletRequest request = new MockHttpServletRequest("GET", "/x");
    request.addHeader(SpillwayHttpHeaders.SESSION, "7");
    request.addHeader(SpillwayHttpHeaders.FLAGS, "1"); // registers
    MockHttpServletResponse response = new MockHttpServletResponse();
    f.doFilter(request, response, (req, res) -> redirect((HttpServletResponse) res, how));

    assertThat(response.isCommitted()).isTrue();
    assertThat(response.getRedirectedUrl()).isEqualTo("/elsewhere");
    assertThat(response.getHeader(SpillwayHttpHeaders.STATUS))
        .as("the redirect's Spillway-Status").isEqualTo(Integer.toString(Status.OK.code()));
    assertThat(gate.inFlight()).isZero();
  }
}
