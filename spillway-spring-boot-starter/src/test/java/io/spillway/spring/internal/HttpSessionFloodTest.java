package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.RequestMetadata;
import io.spillway.api.Status;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayProperties;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatusCode;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * A client that invents a session id for every request (a session flood,
 * docs/results/reliability.md) over HTTP, in virtual time, with the default scheme: each request
 * names its connection (remote address and port) to the gate as its origin, so the credit gate
 * holds one connection to its newcomers' places (sessions on probation, none of which comes back;
 * BreakwaterServerGate's class comment, "Newcomers") and refuses the rest for credit; another
 * connection has places of its own. At the gate, and through the servlet filter and the WebFilter
 * (their mock requests naming the connection), as the gRPC adapter's {@code
 * SessionFloodOverSocketsTest} does it through gRPC.
 */
class HttpSessionFloodTest {

  /** Sessions one connection may hold on probation (BreakwaterServerGate's newcomers' line). */
  private static final int NEWCOMERS_PER_CONNECTION = 4 * BreakwaterConfig.DEFAULT_PER_SESSION_CAP;
  private static final int FLOOD = 3 * NEWCOMERS_PER_CONNECTION;
  private static final String NO_CREDIT = Integer.toString(Status.REJECTED_NO_CREDIT.code());
  private static final InetSocketAddress CONNECTION = new InetSocketAddress("10.0.0.7", 40_001);
  private static final InetSocketAddress OTHER_CONNECTION =
      new InetSocketAddress("10.0.0.7", 40_002);

  private final VirtualTimeServletFilter fixture = new VirtualTimeServletFilter();

  /** How one request ended. */
  private enum Answer { SERVED, REFUSED_FOR_CREDIT, OTHER }

  /** Sends one request that registers {@code sessionId}, on {@code connection}. */
  private interface Transport {
    Answer send(InetSocketAddress connection, long sessionId) throws Exception;
  }

  /** How a flood's requests ended. */
  private record Flood(int served, int refusedForCredit, int other) { }

  /** {@link #FLOOD} requests one after another, each registering a session id never used before. */
  private static Flood flood(Transport transport, InetSocketAddress connection, long firstSession)
      throws Exception {
    int[] counts = new int[Answer.values().length];
    for (int i = 0; i < FLOOD; i++) {
      counts[transport.send(connection, firstSession + i).ordinal()]++;
    }
    return new Flood(counts[Answer.SERVED.ordinal()], counts[Answer.REFUSED_FOR_CREDIT.ordinal()],
        counts[Answer.OTHER.ordinal()]);
  }

  private static void floodsAreHeldPerConnection(Transport transport) throws Exception {
    Flood first = flood(transport, CONNECTION, 1_000_000);
    assertThat(first).as("the flooding connection is served one request per newcomer's place")
        .isEqualTo(new Flood(NEWCOMERS_PER_CONNECTION, FLOOD - NEWCOMERS_PER_CONNECTION, 0));
    Flood second = flood(transport, OTHER_CONNECTION, 2_000_000);
    assertThat(second).as("another connection has places of its own")
        .isEqualTo(new Flood(NEWCOMERS_PER_CONNECTION, FLOOD - NEWCOMERS_PER_CONNECTION, 0));
    Flood again = flood(transport, CONNECTION, 3_000_000);
    assertThat(again).as("the first connection's places are still taken")
        .isEqualTo(new Flood(0, FLOOD, 0));
  }

  private static Answer answer(int httpStatus, String spillwayStatus) {
    if (httpStatus == 200) {
      return Answer.SERVED;
    }
    return httpStatus == SpillwayProperties.DEFAULT_REJECT_STATUS && NO_CREDIT.equals(spillwayStatus)
        ? Answer.REFUSED_FOR_CREDIT : Answer.OTHER;
  }

  /** The gate itself, given the connection as the filters give it. */
  private Answer admit(InetSocketAddress connection, long sessionId) {
    Map<String, String> headers = Map.of(SpillwayHttpHeaders.SESSION, Long.toString(sessionId),
        SpillwayHttpHeaders.FLAGS, Integer.toString(RequestMetadata.FLAG_REGISTER));
    SpillwayHttpGate.Admission a = fixture.gate.admit(fixture.gate.endpointFor("/x"), headers::get,
        connection);
    if (a.isAdmitted()) {
      a.end(200, null);
      return Answer.SERVED;
    }
    return a.status() == Status.REJECTED_NO_CREDIT ? Answer.REFUSED_FOR_CREDIT : Answer.OTHER;
  }

  @Test
  void theGateHoldsEachConnectionToItsNewcomers() throws Exception {
    floodsAreHeldPerConnection(this::admit);
  }

  /** A request whose server names no connection has no origin: registered as in the paper. */
  @Test
  void withoutAConnectionEverySessionRegisters() throws Exception {
    assertThat(flood(this::admit, null, 1_000_000)).isEqualTo(new Flood(FLOOD, 0, 0));
  }

  @Test
  void theServletFilterNamesTheConnectionByRemoteAddressAndPort() throws Exception {
    SpillwayServletFilter filter = fixture.filter;
    floodsAreHeldPerConnection((connection, sessionId) -> {
      MockHttpServletRequest request = new MockHttpServletRequest("GET", "/x");
      request.setRemoteAddr(connection.getHostString());
      request.setRemotePort(connection.getPort());
      request.addHeader(SpillwayHttpHeaders.SESSION, Long.toString(sessionId));
      request.addHeader(SpillwayHttpHeaders.FLAGS, Integer.toString(RequestMetadata.FLAG_REGISTER));
      MockHttpServletResponse response = new MockHttpServletResponse();
      filter.doFilter(request, response, (req, res) -> { });
      return answer(response.getStatus(), response.getHeader(SpillwayHttpHeaders.STATUS));
    });
  }

  @Test
  void theWebFilterNamesTheConnectionByRemoteAddress() throws Exception {
    SpillwayWebFilter filter = new SpillwayWebFilter(fixture.gate, null, null,
        SpillwayProperties.DEFAULT_REJECT_STATUS);
    floodsAreHeldPerConnection((connection, sessionId) -> {
      MockServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.get("/x")
          .remoteAddress(connection)
          .header(SpillwayHttpHeaders.SESSION, Long.toString(sessionId))
          .header(SpillwayHttpHeaders.FLAGS, Integer.toString(RequestMetadata.FLAG_REGISTER)));
      filter.filter(exchange, e -> Mono.empty()).block(Duration.ofSeconds(5));
      HttpStatusCode status = exchange.getResponse().getStatusCode();
      return answer(status == null ? 200 : status.value(),
          exchange.getResponse().getHeaders().getFirst(SpillwayHttpHeaders.STATUS));
    });
  }
}
