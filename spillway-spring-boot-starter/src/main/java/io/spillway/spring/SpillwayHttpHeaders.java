package io.spillway.spring;

import io.grpc.Metadata;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * The overload fields as HTTP headers: the same fields and values as the gRPC keys of
 * {@link SpillwayMetadata} (ASCII decimal integers), under the gRPC key's name in HTTP's usual
 * capitalisation ({@code spillway-session} is {@code Spillway-Session}), except the budget, which
 * HTTP calls {@code Spillway-Budget} (nanoseconds, as {@code spillway-budget-ns}).
 *
 * <p>Reading goes through {@link SpillwayMetadata#readRequest}, so a malformed value is treated
 * exactly as over gRPC: as absent, with a reason for the caller to log, never failing the request.
 * Response fields go in response headers ({@code Spillway-Status}, {@code Spillway-Credit-Delta},
 * ...); a credit message the server stamped also carries {@value #CREDIT_WINDOW} (see there).
 * A reject also carries {@code Retry-After} (whole
 * seconds, RFC 9110 §10.2.3) and {@code Spillway-Retry-Pushback-Ms}, the milliseconds gRPC's
 * {@code grpc-retry-pushback-ms} carries.
 *
 * <p>Stateless and thread-safe.
 */
public final class SpillwayHttpHeaders {

  public static final String SESSION = "Spillway-Session";
  public static final String REQUEST_ID = "Spillway-Request-Id";
  public static final String DEMAND = "Spillway-Demand";
  public static final String CREDIT_ID = "Spillway-Credit-Id";
  public static final String TOKENS = "Spillway-Tokens";
  public static final String PRIORITY = "Spillway-Priority";
  public static final String FLAGS = "Spillway-Flags";
  /** The remaining queueing budget in nanoseconds. */
  public static final String BUDGET = "Spillway-Budget";
  public static final String STATUS = "Spillway-Status";
  public static final String CREDIT_DELTA = "Spillway-Credit-Delta";
  /**
   * The session's credit window after this answer's change and the stamp that orders it among
   * the session's credit messages ({@link ResponseMetadata#creditWindow()}, {@link
   * ResponseMetadata#creditSeq()}), as gRPC's {@code spillway-credit-window} carries them
   * ({@link SpillwayMetadata#CREDIT_WINDOW}): {@code window/stamp}, two signed decimal integers,
   * an int and a non-zero long, e.g. {@code Spillway-Credit-Window: 3/30064771073}. One header, so
   * that the two travel or are lost together; the credit stream's events carry the same text in
   * their {@code window:} field. Sent only with a stamp: an answer without it is a delta alone
   * ({@value #CREDIT_DELTA}). Read as the delta is: a malformed value counts as absent.
   *
   * <p>Why the window and not only its change: a client applies deltas to a count of the window
   * (breakwater-osdi20 §3.2, a client "can send requests as long as it has credits"), and a delta
   * lost to it (a caller that gave up on a call after the server answered never reads the answer)
   * leaves that count wrong for good; a count that drifted to nothing while the server holds the
   * window open waits for an explicit credit (§3.3) that never comes. An absolute window mends the
   * count by the next message read (ResponseMetadata's class comment).
   */
  public static final String CREDIT_WINDOW = "Spillway-Credit-Window";
  /**
   * On a demand report ({@code POST /spillway/credits}): the index of the server gate it is for
   * ({@link SpillwayHttpGate#routes}), 0 (the default endpoint's) when absent.
   */
  public static final String GATE = "Spillway-Gate";
  public static final String PRICE = "Spillway-Price";
  /** On a reject: the server's queueing delay in milliseconds, at least 1. */
  public static final String RETRY_PUSHBACK_MS = "Spillway-Retry-Pushback-Ms";
  /** On a reject: the same, in whole seconds rounded up, at least 1. */
  public static final String RETRY_AFTER = "Retry-After";
  /**
   * On the credit stream's answer: which gate decides on which paths ({@link
   * SpillwayHttpGate#routes}), so a session keeps one credit window per gate.
   */
  public static final String ROUTES = "Spillway-Routes";
  /**
   * On the credit stream's answer: the key the server bound the session's stream to, 128 random
   * bits in hex. The session's demand reports and its deregistration ({@code POST} and {@code
   * DELETE /spillway/credits}), and a later stream that is to replace this one, carry it back in
   * this header; while the stream is open, the server refuses them without it ({@code 403}). The
   * session id alone is not a secret (it rides on every request, and a proxy's logs may show it),
   * so without the key any client could end another's stream, take its credits or return them to
   * the pool. The gRPC transport binds a session's stream to its connection instead; an HTTP/1.1
   * client sends these on other pooled connections than its stream's.
   */
  public static final String STREAM_KEY = "Spillway-Stream-Key";
  /**
   * On the answers of a server whose credit stream is not at the origin's {@code
   * /spillway/credits} (a servlet context path, a WebFlux base path): the path it is served at,
   * which a client session that found no stream at the origin's path opens instead.
   */
  public static final String CREDITS = "Spillway-Credits";

  private static final List<String> REQUEST_NAMES = List.of(SESSION, REQUEST_ID, DEMAND,
      CREDIT_ID, TOKENS, PRIORITY, FLAGS, BUDGET);
  private static final List<Metadata.Key<String>> REQUEST_KEYS = List.of(SpillwayMetadata.SESSION,
      SpillwayMetadata.REQUEST_ID, SpillwayMetadata.DEMAND, SpillwayMetadata.CREDIT_ID,
      SpillwayMetadata.TOKENS, SpillwayMetadata.PRIORITY, SpillwayMetadata.FLAGS,
      SpillwayMetadata.BUDGET);

  private static final List<String> RESPONSE_NAMES = List.of(STATUS, CREDIT_DELTA, CREDIT_WINDOW,
      CREDIT_ID, PRICE);
  private static final List<Metadata.Key<String>> RESPONSE_KEYS = List.of(SpillwayMetadata.STATUS,
      SpillwayMetadata.CREDIT_DELTA, SpillwayMetadata.CREDIT_WINDOW, SpillwayMetadata.CREDIT_ID,
      SpillwayMetadata.PRICE);

  private SpillwayHttpHeaders() { }

  /**
   * Resets {@code into} and fills it from the response headers {@code header} returns by name
   * ({@code null} when absent), as {@link SpillwayMetadata#readResponse} reads trailers: a
   * malformed value counts as absent.
   *
   * @return {@code null} if every value present was well formed, else why some were ignored
   */
  public static String readResponse(Function<String, String> header, ResponseMetadata into) {
    Metadata found = new Metadata();
    for (int i = 0; i < RESPONSE_NAMES.size(); i++) {
      String v = header.apply(RESPONSE_NAMES.get(i));
      if (v != null) {
        found.put(RESPONSE_KEYS.get(i), v.trim());
      }
    }
    return SpillwayMetadata.readResponse(found, into);
  }

  /** The {@link #CREDIT_WINDOW} value of {@code window} stamped {@code seq} (not 0). */
  public static String creditWindow(int window, long seq) {
    if (seq == 0) {
      throw new IllegalArgumentException("stamp 0 means none: a window needs a stamp");
    }
    return SpillwayMetadata.formatCreditWindow(window, seq);
  }

  /**
   * Reads a {@link #CREDIT_WINDOW} value into {@code into}'s window and stamp, leaving the rest of
   * {@code into} as it is; a malformed value changes nothing, as in {@link #readResponse}.
   *
   * @return {@code null} if it was well formed, else why it was ignored
   */
  public static String readCreditWindow(String value, ResponseMetadata into) {
    return SpillwayMetadata.readCreditWindow(value, into) ? null
        : CREDIT_WINDOW + ": '" + value + "' is not window/stamp, an int and a non-zero long";
  }

  /**
   * Resets {@code into} and fills it from the request headers {@code header} returns by name
   * ({@code null} when absent). A request without Spillway headers costs eight look-ups and no
   * allocation.
   *
   * @return {@code null} if every value present was well formed, else why some were ignored
   */
  public static String readRequest(Function<String, String> header, RequestMetadata into) {
    Metadata found = null;
    for (int i = 0; i < REQUEST_NAMES.size(); i++) {
      String v = header.apply(REQUEST_NAMES.get(i));
      if (v != null) {
        if (found == null) {
          found = new Metadata();
        }
        found.put(REQUEST_KEYS.get(i), v.trim());
      }
    }
    if (found == null) {
      into.reset();
      return null;
    }
    String problem = SpillwayMetadata.readRequest(found, into);
    return problem == null ? null : problem.replace("spillway-budget-ns", BUDGET);
  }

  /** Writes the fields of {@code request} that differ from their default. */
  public static void writeRequest(RequestMetadata request, BiConsumer<String, String> header) {
    if (request.sessionId() != 0) {
      header.accept(SESSION, Long.toString(request.sessionId()));
    }
    if (request.requestId() != 0) {
      header.accept(REQUEST_ID, Long.toString(request.requestId()));
    }
    if (request.demand() != 0) {
      header.accept(DEMAND, Integer.toString(request.demand()));
    }
    if (request.creditId() != 0) {
      header.accept(CREDIT_ID, Long.toString(request.creditId()));
    }
    if (request.tokens() != 0) {
      header.accept(TOKENS, Long.toString(request.tokens()));
    }
    if (request.priority() != 0) {
      header.accept(PRIORITY, Integer.toString(request.priority()));
    }
    if (request.flags() != 0) {
      header.accept(FLAGS, Integer.toString(request.flags()));
    }
    if (request.budgetNanos() != Long.MAX_VALUE) {
      header.accept(BUDGET, Long.toString(request.budgetNanos()));
    }
  }

  /** Writes the response fields that differ from their default. */
  public static void writeResponse(ResponseMetadata response, BiConsumer<String, String> header) {
    header.accept(STATUS, Integer.toString(response.status().code()));
    if (response.creditDelta() != 0) {
      header.accept(CREDIT_DELTA, Integer.toString(response.creditDelta()));
    }
    if (response.creditSeq() != 0) {
      header.accept(CREDIT_WINDOW, creditWindow(response.creditWindow(), response.creditSeq()));
    }
    if (response.creditId() != 0) {
      header.accept(CREDIT_ID, Long.toString(response.creditId()));
    }
    if (response.hasPrice()) {
      header.accept(PRICE, Long.toString(response.price()));
    }
  }
}
