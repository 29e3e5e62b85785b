package io.spillway.spring.internal;

import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.api.ResponseMetadata;
import io.spillway.grpc.EventLoopProbe;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpGate.Admission;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayProperties;
import io.spillway.spring.SpillwayReactor;
import java.util.function.Consumer;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.ErrorResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * Spillway in front of WebFlux: decides on each exchange on the event loop it arrived on, before
 * any other filter; answers a reject at once (the configured status, {@code 429} by default, with
 * {@code Retry-After}; {@link SpillwayProperties#getRejectStatus}); puts an admitted
 * exchange's budget in the Reactor context ({@link SpillwayReactor#BUDGET_KEY}); and ends its permit
 * exactly once, when the exchange completes, fails or is cancelled (the client went away). A
 * {@link io.spillway.api.BudgetExceededException} becomes a fast reject of that status if the
 * response is not committed yet. A request from a Spillway session gets its response fields, the credit delta
 * among them, in its headers: its permit ends just before they are sent. Its credit stream
 * ({@value HttpCreditStreams#PATH}) is served here too, under the base path, which the answers
 * under a base path name ({@link SpillwayHttpHeaders#CREDITS}). The event loop is probed on each arrival ({@link EventLoopProbe}), which is how
 * Reactor Netty's backlog enters the queueing delay.
 *
 * <p>Thread-safe.
 */
public final class SpillwayWebFilter implements WebFilter, Ordered {

  private final SpillwayHttpGate gate;
  private final EventLoopProbe probe;
  private final HttpCreditStreams credits;
  private final HttpStatus rejectStatus;

  /**
   * @param probe the event loops' probe, or {@code null} if Netty is absent
   * @param credits where the credit streams of Spillway sessions are kept ({@value
   *     HttpCreditStreams#PATH} is served from it), or {@code null} to serve no such path
   * @param rejectStatus the status of a refused or aborted request (429 or 503)
   */
  public SpillwayWebFilter(SpillwayHttpGate gate, EventLoopProbe probe, HttpCreditStreams credits,
      int rejectStatus) {
    if (!SpillwayProperties.REJECT_STATUSES.contains(rejectStatus)) {
      throw new IllegalArgumentException("rejectStatus must be 429 or 503, not " + rejectStatus);
    }
    this.gate = gate;
    this.probe = probe;
    this.credits = credits;
    this.rejectStatus = HttpStatus.valueOf(rejectStatus);
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    String path = exchange.getRequest().getPath().pathWithinApplication().value();
    if (credits != null && HttpCreditStreams.PATH.equals(path)) {
      return serveCredits(exchange);
    }
    SpillwayHttpGate.Endpoint endpoint = gate.endpointFor(path);
    if (endpoint == null) {
      return chain.filter(exchange);
    }
    if (probe != null) {
      probe.arrived(Long.MIN_VALUE);
    }
    String contextPath = exchange.getRequest().getPath().contextPath().value();
    if (credits != null && !contextPath.isEmpty()) {
      // clients look for the stream at the origin's path first: name the one it is at
      exchange.getResponse().getHeaders().set(SpillwayHttpHeaders.CREDITS,
          contextPath + HttpCreditStreams.PATH);
    }
    Admission admission = gate.admit(endpoint, exchange.getRequest().getHeaders()::getFirst,
        exchange.getRequest().getRemoteAddress());
    ServerHttpResponse response = exchange.getResponse();
    if (!admission.isAdmitted()) {
      response.setStatusCode(rejectStatus);
      admission.writeRejectHeaders(response.getHeaders()::set);
      return response.setComplete();
    }
    // The chain runs from here, on this thread: no queue of the server's own lies between the
    // decision and the handler, and a handler awaiting a downstream reply is not waiting in one.
    admission.started(admission.decidedAtNanos());
    if (admission.hasSession()) {
      // the credit delta must be in the headers: end the permit as they are about to go
      response.beforeCommit(() -> {
        HttpStatusCode status = response.getStatusCode();
        ResponseMetadata fields = admission.end(status == null ? 200 : status.value(), null);
        if (fields != null) {
          SpillwayHttpHeaders.writeResponse(fields, response.getHeaders()::set);
        }
        return Mono.empty();
      });
    }
    Mono<Void> served = chain.filter(exchange);
    RequestBudget budget = admission.budget();
    if (budget != null) {
      served = served.contextWrite(SpillwayReactor.withBudget(budget));
    }
    End end = new End(admission, response, this::sendOnStream);
    return served
        .onErrorResume(e -> SpillwayHttpGate.budgetExceeded(e) != null && !response.isCommitted(),
            e -> {
              response.setStatusCode(rejectStatus);
              admission.writeAbortHeaders(admission.end(rejectStatus.value(), e),
                  response.getHeaders()::set);
              return response.setComplete();
            })
        .doOnError(end.onError)
        .doFinally(end);
  }

  /**
   * Sends the credit message of a session's request that ended with no answer to carry it (its
   * client went away, or its response's headers had gone) on the session's credit stream: its
   * delta and, when the gate stamped it, the window and stamp the answer would have carried. The
   * gate counted the change when the permit ended; a client that never sees it counts the request
   * as ended without one, and a client that reads deltas alone keeps a window apart from the
   * server's for good (ResponseMetadata's class comment). The stamp lets the client take the
   * window as it is, and settles the doubt its own end of the request left it in ({@code
   * ClientGate#onUnanswered}).
   */
  private void sendOnStream(Admission admission, ResponseMetadata fields) {
    if (credits == null || fields == null || !admission.hasSession()
        || fields.creditDelta() == 0 && fields.creditSeq() == 0) {
      return;
    }
    int index = gate.creditIndex(admission.endpoint());
    if (index >= 0) {
      credits.channel(index).sendCredit(fields.sessionId(), fields.creditDelta(),
          fields.creditWindow(), fields.creditSeq());
    }
  }

  /**
   * {@value HttpCreditStreams#PATH}: {@code GET} opens the session's credit stream, a response body
   * of server-sent events fed by the gates' control loops as the body's writer asks for them
   * ({@link FluxCreditStream}; {@code send} never blocks), {@code POST} reports its demand
   * ({@link HttpCreditStreams#demand}), {@code DELETE} deregisters the session ({@link
   * HttpCreditStreams#deregister}), each refused without the key of the session's open stream;
   * without a well-formed {@code Spillway-Session} it is a {@code 400}.
   */
  private Mono<Void> serveCredits(ServerWebExchange exchange) {
    ServerHttpResponse response = exchange.getResponse();
    long session = HttpCreditStreams.sessionOf(
        exchange.getRequest().getHeaders().getFirst(SpillwayHttpHeaders.SESSION));
    if (session <= 0) {
      response.setStatusCode(HttpStatus.BAD_REQUEST);
      return response.setComplete();
    }
    HttpMethod method = exchange.getRequest().getMethod();
    String keyHeader =
        exchange.getRequest().getHeaders().getFirst(SpillwayHttpHeaders.STREAM_KEY);
    if (HttpMethod.DELETE.equals(method)) {
      response.setStatusCode(HttpStatus.valueOf(credits.deregister(session, keyHeader, gate)));
      return response.setComplete();
    }
    if (HttpMethod.POST.equals(method)) {
      response.setStatusCode(HttpStatus.valueOf(credits.demand(session,
          exchange.getRequest().getHeaders().getFirst(SpillwayHttpHeaders.DEMAND),
          exchange.getRequest().getHeaders().getFirst(SpillwayHttpHeaders.GATE), keyHeader,
          gate)));
      return response.setComplete();
    }
    if (!HttpMethod.GET.equals(method)) {
      response.setStatusCode(HttpStatus.METHOD_NOT_ALLOWED);
      response.getHeaders().set("Allow", "GET, POST, DELETE");
      return response.setComplete();
    }
    FluxCreditStream stream = new FluxCreditStream();
    String key = HttpCreditStreams.newKey();
    int status = credits.open(session, stream, key, keyHeader);
    if (status != HttpStatus.OK.value()) {
      response.setStatusCode(HttpStatus.valueOf(status));
      return response.setComplete();
    }
    response.setStatusCode(HttpStatus.OK);
    response.getHeaders().setContentType(MediaType.TEXT_EVENT_STREAM);
    response.getHeaders().setCacheControl("no-store");
    response.getHeaders().set(SpillwayHttpHeaders.ROUTES, gate.routes());
    response.getHeaders().set(SpillwayHttpHeaders.STREAM_KEY, key);
    Flux<Mono<DataBuffer>> events = Flux.concat(Mono.just(HttpCreditStreams.SUBSCRIBED),
        stream.events()).map(bytes -> Mono.just(response.bufferFactory().wrap(bytes)));
    return response.writeAndFlushWith(events).doFinally(signal -> {
      if (credits.closed(session, stream)) {
        gate.deregister(session);
      }
    });
  }

  /**
   * Ends the exchange's permit, once (later calls are ignored by the admission). A failure ends it
   * (an error that carries a client error's status as that answer, as under Spring MVC, where the
   * dispatcher resolves it) as the error signal passes, before the error handlers downstream of this filter see it: a
   * session's fields go in the headers then, if they are not sent, so the error answer those
   * handlers write carries them, however late they write it (an answer written after an
   * asynchronous step commits after this filter's {@code doFinally} has run).
   */
  private static final class End implements Consumer<SignalType> {
    private final Admission admission;
    private final ServerHttpResponse response;
    private final java.util.function.BiConsumer<Admission, ResponseMetadata> undelivered;
    final Consumer<Throwable> onError = this::failed;

    End(Admission admission, ServerHttpResponse response,
        java.util.function.BiConsumer<Admission, ResponseMetadata> undelivered) {
      this.admission = admission;
      this.response = response;
      this.undelivered = undelivered;
    }

    private void failed(Throwable e) {
      // An error that carries a client error's status (a ResponseStatusException: a 404, a 400)
      // is the answer the exchange gets, as Spring MVC's dispatcher resolves it: not a failure.
      ResponseMetadata fields = e instanceof ErrorResponse answer
          && answer.getStatusCode().value() < 500 && SpillwayHttpGate.budgetExceeded(e) == null
          ? admission.end(answer.getStatusCode().value(), null)
          : admission.end(500, e);
      if (fields != null && admission.hasSession()) {
        if (!response.isCommitted()) {
          SpillwayHttpHeaders.writeResponse(fields, response.getHeaders()::set);
        } else {
          undelivered.accept(admission, fields);
        }
      }
    }

    @Override
    public void accept(SignalType signal) {
      if (signal == SignalType.ON_COMPLETE) {
        HttpStatusCode status = response.getStatusCode();
        // a session's permit ended as its headers went; one without them (no commit) ends here
        undelivered.accept(admission,
            admission.end(status == null ? 200 : status.value(), null));
      } else {
        // cancelled: the client went away and no answer will carry the fields; an error has
        // ended it already
        undelivered.accept(admission, admission.end(Outcome.FAILED));
      }
    }
  }
}
