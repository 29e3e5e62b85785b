package io.spillway.grpc;

import io.grpc.Metadata;
import io.spillway.api.InterfacePrices;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import java.util.Arrays;

/**
 * The overload fields of docs/design.md ("Wire metadata") as gRPC metadata: one ASCII key per
 * field, each value a decimal integer, so that any gRPC tool can set them by hand (for example
 * {@code ghz -m '{"spillway-tokens":"100","spillway-session":"7"}'}).
 *
 * <table>
 *   <caption>Keys</caption>
 *   <tr><th>where</th><th>key</th><th>value</th><th>field</th></tr>
 *   <tr><td>request headers</td><td>{@code spillway-session}</td><td>long</td>
 *       <td>{@link RequestMetadata#sessionId()}</td></tr>
 *   <tr><td>request headers</td><td>{@code spillway-request-id}</td><td>long</td>
 *       <td>{@link RequestMetadata#requestId()}</td></tr>
 *   <tr><td>request headers</td><td>{@code spillway-demand}</td><td>int &ge; 0</td>
 *       <td>{@link RequestMetadata#demand()} (Breakwater)</td></tr>
 *   <tr><td>request headers</td><td>{@code spillway-credit-id}</td><td>long</td>
 *       <td>{@link RequestMetadata#creditId()} (Protego)</td></tr>
 *   <tr><td>request headers</td><td>{@code spillway-tokens}</td><td>long &ge; 0</td>
 *       <td>{@link RequestMetadata#tokens()} (Rajomon)</td></tr>
 *   <tr><td>request headers</td><td>{@code spillway-priority}</td><td>int &ge; 0</td>
 *       <td>{@link RequestMetadata#priority()} (DAGOR)</td></tr>
 *   <tr><td>request headers</td><td>{@code spillway-flags}</td><td>int bit set</td>
 *       <td>{@link RequestMetadata#flags()}: 1 register, 2 deregister</td></tr>
 *   <tr><td>request headers</td><td>{@code spillway-budget-ns}</td><td>long &ge; 0</td>
 *       <td>{@link RequestMetadata#budgetNanos()}, the remaining queueing budget (ASQM)</td></tr>
 *   <tr><td>response trailers</td><td>{@code spillway-status}</td><td>int</td>
 *       <td>{@link ResponseMetadata#status()} as {@link Status#code()}</td></tr>
 *   <tr><td>response trailers</td><td>{@code spillway-credit-delta}</td><td>int, signed</td>
 *       <td>{@link ResponseMetadata#creditDelta()}</td></tr>
 *   <tr><td>response trailers</td><td>{@code spillway-credit-window}</td><td>{@code window/stamp},
 *       two signed decimal integers, e.g. {@code 3/30064771073}</td>
 *       <td>{@link ResponseMetadata#creditWindow()} and {@link ResponseMetadata#creditSeq()}: the
 *       window after this change and the stamp that orders it; only from a gate that stamps</td></tr>
 *   <tr><td>response trailers</td><td>{@code spillway-credit-id}</td><td>long</td>
 *       <td>{@link ResponseMetadata#creditId()}</td></tr>
 *   <tr><td>response trailers</td><td>{@code spillway-price}</td><td>long</td>
 *       <td>{@link ResponseMetadata#price()}, only when the response carries one</td></tr>
 *   <tr><td>response trailers</td><td>{@code spillway-prices}</td><td>{@code method=price} pairs,
 *       comma-separated, e.g. {@code hotel.Frontend/Search=120,hotel.Frontend/Reserve=40}</td>
 *       <td>{@link ResponseMetadata#interfacePrices()} (Rajomon), by full method name; only by
 *       the overloads that take an {@link InterfaceRegistry}</td></tr>
 *   <tr><td>response trailers</td><td>{@code spillway-threshold}</td><td>int</td>
 *       <td>{@link ResponseMetadata#threshold()} (DAGOR's level)</td></tr>
 * </table>
 *
 * <p>The interface id is not on the wire: each side derives it from the full method name through
 * its {@link InterfaceRegistry}. For the same reason the price list names methods: the writer
 * turns its ids into names, and the reader keeps the names its own registry knows (the methods its
 * side has called) and drops the rest.
 *
 * <p>Response fields ride in the <em>trailers</em>, always: they are only known when the request
 * ends (its credit delta is computed as its permit completes), and a reject is a trailers-only
 * response anyway. Writers leave out fields at their default value (zero, no price, no budget),
 * which readers treat the same as absent.
 *
 * <p>Reading is robust: a value that is not a decimal integer, or is out of range for its field,
 * is treated as absent, and the reader returns a reason naming the key and the value, for the
 * caller to log. Nothing here throws on peer input.
 *
 * <p>Stateless and thread-safe.
 */
public final class SpillwayMetadata {

  /** Request: the client session's id. */
  public static final Metadata.Key<String> SESSION = key("spillway-session");
  /** Request: the request's id within its session. */
  public static final Metadata.Key<String> REQUEST_ID = key("spillway-request-id");
  /** Request: requests still queued at the client behind this one. */
  public static final Metadata.Key<String> DEMAND = key("spillway-demand");
  /** Request: the credit the request spends; response: its echo. */
  public static final Metadata.Key<String> CREDIT_ID = key("spillway-credit-id");
  /** Request: the tokens the request carries. */
  public static final Metadata.Key<String> TOKENS = key("spillway-tokens");
  /** Request: the request's priority, lower is more important. */
  public static final Metadata.Key<String> PRIORITY = key("spillway-priority");
  /** Request: {@link RequestMetadata#FLAG_REGISTER} and {@link RequestMetadata#FLAG_DEREGISTER}. */
  public static final Metadata.Key<String> FLAGS = key("spillway-flags");
  /** Request: the remaining queueing budget in nanoseconds. */
  public static final Metadata.Key<String> BUDGET = key("spillway-budget-ns");
  /** Response: the {@link Status#code()} of the request's end. */
  public static final Metadata.Key<String> STATUS = key("spillway-status");
  /** Response: the signed change of the session's credit window. */
  public static final Metadata.Key<String> CREDIT_DELTA = key("spillway-credit-delta");
  /**
   * Response: the session's credit window after this response's change and its stamp, {@code
   * window/stamp} ({@link ResponseMetadata#creditSeq()}); also the form of the stamp on the
   * credit stream's messages ({@link #formatCreditWindow}).
   */
  public static final Metadata.Key<String> CREDIT_WINDOW = key("spillway-credit-window");
  /** Response: the interface's price, when the response carries one. */
  public static final Metadata.Key<String> PRICE = key("spillway-price");
  /** Response: the prices of the server's interfaces, as {@code method=price,...}. */
  public static final Metadata.Key<String> PRICES = key("spillway-prices");
  /** Response: the admission threshold the server advertises. */
  public static final Metadata.Key<String> THRESHOLD = key("spillway-threshold");

  private static final int KNOWN_FLAGS = RequestMetadata.FLAG_REGISTER | RequestMetadata.FLAG_DEREGISTER;

  private SpillwayMetadata() { }

  private static Metadata.Key<String> key(String name) {
    return Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
  }

  /**
   * Resets {@code into} and fills it from the request {@code headers}. Malformed values are left
   * at their default.
   *
   * @return {@code null} if every value present was well formed, else why some were ignored
   */
  public static String readRequest(Metadata headers, RequestMetadata into) {
    into.reset();
    Problems problems = null;
    String v;
    if ((v = headers.get(SESSION)) != null) {
      long x = parseLong(v, Long.MIN_VALUE);
      if (x == BAD) {
        problems = Problems.add(problems, SESSION, v, "not a decimal integer");
      } else {
        into.sessionId(x);
      }
    }
    if ((v = headers.get(REQUEST_ID)) != null) {
      long x = parseLong(v, Long.MIN_VALUE);
      if (x == BAD) {
        problems = Problems.add(problems, REQUEST_ID, v, "not a decimal integer");
      } else {
        into.requestId(x);
      }
    }
    if ((v = headers.get(DEMAND)) != null) {
      long x = parseLong(v, 0);
      if (x == BAD || x > Integer.MAX_VALUE) {
        problems = Problems.add(problems, DEMAND, v, "not an int >= 0");
      } else {
        into.demand((int) x);
      }
    }
    if ((v = headers.get(CREDIT_ID)) != null) {
      long x = parseLong(v, Long.MIN_VALUE);
      if (x == BAD) {
        problems = Problems.add(problems, CREDIT_ID, v, "not a decimal integer");
      } else {
        into.creditId(x);
      }
    }
    if ((v = headers.get(TOKENS)) != null) {
      long x = parseLong(v, 0);
      if (x == BAD) {
        problems = Problems.add(problems, TOKENS, v, "not a long >= 0");
      } else {
        into.tokens(x);
      }
    }
    if ((v = headers.get(PRIORITY)) != null) {
      long x = parseLong(v, 0);
      if (x == BAD || x > Integer.MAX_VALUE) {
        problems = Problems.add(problems, PRIORITY, v, "not an int >= 0");
      } else {
        into.priority((int) x);
      }
    }
    if ((v = headers.get(FLAGS)) != null) {
      long x = parseLong(v, 0);
      if (x == BAD || x > Integer.MAX_VALUE) {
        problems = Problems.add(problems, FLAGS, v, "not an int >= 0");
      } else {
        into.flags((int) x & KNOWN_FLAGS); // unknown bits come from newer peers: ignore them
      }
    }
    if ((v = headers.get(BUDGET)) != null) {
      long x = parseLong(v, 0);
      if (x == BAD) {
        problems = Problems.add(problems, BUDGET, v, "not a long >= 0");
      } else {
        into.budgetNanos(x);
      }
    }
    return problems == null ? null : problems.toString();
  }

  /**
   * Adds the fields of {@code request} that differ from their default to {@code headers}. A key
   * already present in {@code headers} is left alone: whoever set it first (the application, or
   * the downstream interceptor passing on the inbound request's tokens) wins.
   */
  public static void writeRequest(RequestMetadata request, Metadata headers) {
    putIfAbsent(headers, SESSION, request.sessionId(), request.sessionId() != 0);
    putIfAbsent(headers, REQUEST_ID, request.requestId(), request.requestId() != 0);
    putIfAbsent(headers, DEMAND, request.demand(), request.demand() != 0);
    putIfAbsent(headers, CREDIT_ID, request.creditId(), request.creditId() != 0);
    putIfAbsent(headers, TOKENS, request.tokens(), request.tokens() != 0);
    putIfAbsent(headers, PRIORITY, request.priority(), request.priority() != 0);
    putIfAbsent(headers, FLAGS, request.flags(), request.flags() != 0);
    putIfAbsent(headers, BUDGET, request.budgetNanos(), request.budgetNanos() != Long.MAX_VALUE);
  }

  /** Whether {@code trailers} carry Spillway's response fields (a {@code spillway-status}). */
  public static boolean hasResponse(Metadata trailers) {
    return trailers.containsKey(STATUS);
  }

  /**
   * Resets {@code into} (keeping its {@link ResponseMetadata#interfaceId()}) and fills it from the
   * response {@code trailers}. A missing or malformed status leaves {@link Status#OK}.
   *
   * @return {@code null} if every value present was well formed, else why some were ignored
   */
  public static String readResponse(Metadata trailers, ResponseMetadata into) {
    return readResponse(trailers, into, null);
  }

  /** The status a {@code spillway-status} value names, or {@code null} if it names none. */
  static Status statusOf(String value) {
    long x = parseLong(value, 0);
    return x == BAD || x >= Status.values().length ? null : Status.fromCode((int) x);
  }

  /**
   * As {@link #readResponse(Metadata, ResponseMetadata)}, and also reads {@code spillway-prices}
   * into {@link ResponseMetadata#interfacePrices()}, with ids from {@code interfaces}: pairs whose
   * method it does not know are dropped, malformed pairs reported. {@code null} skips the list.
   */
  public static String readResponse(Metadata trailers, ResponseMetadata into,
      InterfaceRegistry interfaces) {
    int interfaceId = into.interfaceId();
    into.reset().interfaceId(interfaceId);
    Problems problems = null;
    String v;
    if ((v = trailers.get(STATUS)) != null) {
      Status status = statusOf(v);
      if (status == null) {
        problems = Problems.add(problems, STATUS, v, "not a known status code");
      } else {
        into.status(status);
      }
    }
    if ((v = trailers.get(CREDIT_DELTA)) != null) {
      long x = parseLong(v, Integer.MIN_VALUE);
      if (x == BAD || x > Integer.MAX_VALUE) {
        problems = Problems.add(problems, CREDIT_DELTA, v, "not an int");
      } else {
        into.creditDelta((int) x);
      }
    }
    if ((v = trailers.get(CREDIT_WINDOW)) != null && !readCreditWindow(v, into)) {
      problems = Problems.add(problems, CREDIT_WINDOW, v, "not window/stamp, an int and a non-zero long");
    }
    if ((v = trailers.get(CREDIT_ID)) != null) {
      long x = parseLong(v, Long.MIN_VALUE);
      if (x == BAD) {
        problems = Problems.add(problems, CREDIT_ID, v, "not a decimal integer");
      } else {
        into.creditId(x);
      }
    }
    if ((v = trailers.get(PRICE)) != null) {
      long x = parseLong(v, Long.MIN_VALUE + 1);
      if (x == BAD) {
        problems = Problems.add(problems, PRICE, v, "not a decimal integer");
      } else {
        into.price(x);
      }
    }
    if ((v = trailers.get(THRESHOLD)) != null) {
      long x = parseLong(v, Integer.MIN_VALUE);
      if (x == BAD || x > Integer.MAX_VALUE) {
        problems = Problems.add(problems, THRESHOLD, v, "not an int");
      } else {
        into.threshold((int) x);
      }
    }
    if (interfaces != null && (v = trailers.get(PRICES)) != null) {
      problems = readPrices(v, into, interfaces, problems);
    }
    return problems == null ? null : problems.toString();
  }

  private static Problems readPrices(String text, ResponseMetadata into,
      InterfaceRegistry interfaces, Problems problems) {
    int pairs = 1;
    for (int i = 0; i < text.length(); i++) {
      pairs += text.charAt(i) == ',' ? 1 : 0;
    }
    int[] ids = new int[pairs];
    long[] prices = new long[pairs];
    int kept = 0;
    int start = 0;
    while (start <= text.length()) {
      int end = text.indexOf(',', start);
      end = end < 0 ? text.length() : end;
      String pair = text.substring(start, end);
      int eq = pair.lastIndexOf('=');
      long price = eq > 0 ? parseLong(pair.substring(eq + 1), 0) : BAD;
      if (price == BAD) {
        problems = Problems.add(problems, PRICES, pair, "not method=price with a price >= 0");
      } else {
        int id = interfaces.find(pair.substring(0, eq).strip());
        if (id >= 0 && !contains(ids, kept, id)) {
          ids[kept] = id;
          prices[kept++] = price;
        }
      }
      start = end + 1;
    }
    if (kept > 0) {
      into.interfacePrices(InterfacePrices.of(Arrays.copyOf(ids, kept), Arrays.copyOf(prices, kept)));
    }
    return problems;
  }

  private static boolean contains(int[] ids, int count, int id) {
    for (int k = 0; k < count; k++) {
      if (ids[k] == id) {
        return true;
      }
    }
    return false;
  }

  /** Adds the fields of {@code response} to {@code trailers}; the status always, the rest unless default. */
  public static void writeResponse(ResponseMetadata response, Metadata trailers) {
    trailers.put(STATUS, Integer.toString(response.status().code()));
    if (response.creditDelta() != 0) {
      trailers.put(CREDIT_DELTA, Integer.toString(response.creditDelta()));
    }
    if (response.creditSeq() != 0) {
      trailers.put(CREDIT_WINDOW, formatCreditWindow(response.creditWindow(), response.creditSeq()));
    }
    if (response.creditId() != 0) {
      trailers.put(CREDIT_ID, Long.toString(response.creditId()));
    }
    if (response.hasPrice()) {
      trailers.put(PRICE, Long.toString(response.price()));
    }
    if (response.threshold() != 0) {
      trailers.put(THRESHOLD, Integer.toString(response.threshold()));
    }
  }

  /** Removes every response field {@link #writeResponse} writes, and the price list. */
  static void removeResponse(Metadata trailers) {
    trailers.discardAll(STATUS);
    trailers.discardAll(CREDIT_DELTA);
    trailers.discardAll(CREDIT_WINDOW);
    trailers.discardAll(CREDIT_ID);
    trailers.discardAll(PRICE);
    trailers.discardAll(PRICES);
    trailers.discardAll(THRESHOLD);
  }

  /**
   * As {@link #writeResponse(ResponseMetadata, Metadata)}, and also writes {@link
   * ResponseMetadata#interfacePrices()} as {@code spillway-prices}, naming each interface by its
   * method in {@code interfaces}; ids without a method are left out. {@code null} skips the list.
   */
  public static void writeResponse(ResponseMetadata response, Metadata trailers,
      InterfaceRegistry interfaces) {
    writeResponse(response, trailers);
    String prices = interfaces == null ? null : pricesText(response.interfacePrices(), interfaces);
    if (prices != null) {
      trailers.put(PRICES, prices);
    }
  }

  /**
   * The gRPC status description of a Spillway reject, naming why: {@code "spillway: rejected
   * (aqm)"}, {@code "(no credit)"}, {@code "(price 42)"}, {@code "(budget)"}, {@code "(limit)"}
   * (with {@code ", threshold N"} when the server advertised one).
   */
  public static String describeReject(ResponseMetadata response) {
    String why = switch (response.status()) {
      case REJECTED_AQM -> "aqm";
      case REJECTED_NO_CREDIT -> "no credit";
      case REJECTED_PRICE -> response.hasPrice() ? "price " + response.price() : "price";
      case REJECTED_BUDGET -> "budget";
      case REJECTED_LIMIT -> response.threshold() != 0
          ? "limit, threshold " + response.threshold() : "limit";
      case EXPIRED -> "expired";
      case TIMED_OUT -> "timed out";
      case FAILED -> "failed";
      case OK -> "ok";
    };
    return "spillway: rejected (" + why + ")";
  }

  // ---- parsing without exceptions ----

  /** Returned by {@link #parseLong} for a malformed or out-of-range value. */
  /**
   * {@code window/stamp}, the form of {@link #CREDIT_WINDOW}; also the stamp's form on the credit
   * stream and in the Spring starter's HTTP headers.
   */
  public static String formatCreditWindow(int window, long seq) {
    return window + "/" + seq;
  }

  /**
   * Reads {@code window/stamp} into {@code into}'s window and stamp, keeping its delta; returns
   * false, changing nothing, if {@code text} is not that form or the stamp is 0 (none).
   */
  public static boolean readCreditWindow(String text, ResponseMetadata into) {
    int slash = text.indexOf('/');
    if (slash < 0) {
      return false;
    }
    long window = parseLong(text.substring(0, slash), Integer.MIN_VALUE);
    long seq = parseLong(text.substring(slash + 1), Long.MIN_VALUE + 1);
    if (window == BAD || window > Integer.MAX_VALUE || seq == BAD || seq == 0) {
      return false;
    }
    into.credit(into.creditDelta(), (int) window, seq);
    return true;
  }

  private static final long BAD = Long.MIN_VALUE;

  /**
   * Parses an optionally signed decimal, surrounding blanks allowed. Returns {@link #BAD} for
   * anything else, for overflow, and for values below {@code min}; {@code min} must be greater
   * than {@link Long#MIN_VALUE} for the answer to be unambiguous, so fields accepting the whole
   * long range cannot carry {@code Long.MIN_VALUE} itself.
   */
  static long parseLong(String s, long min) {
    int start = 0;
    int end = s.length();
    while (start < end && s.charAt(start) == ' ') {
      start++;
    }
    while (end > start && s.charAt(end - 1) == ' ') {
      end--;
    }
    if (start == end) {
      return BAD;
    }
    boolean negative = false;
    char first = s.charAt(start);
    if (first == '-' || first == '+') {
      negative = first == '-';
      if (++start == end) {
        return BAD;
      }
    }
    if (end - start > 19) {
      return BAD;
    }
    long value = 0;
    for (int i = start; i < end; i++) {
      int d = s.charAt(i) - '0';
      if (d < 0 || d > 9) {
        return BAD;
      }
      // accumulate negatively so that the whole range fits; detect overflow
      if (value < (Long.MIN_VALUE + d) / 10) {
        return BAD;
      }
      value = value * 10 - d;
    }
    if (!negative) {
      if (value == Long.MIN_VALUE) {
        return BAD;
      }
      value = -value;
    }
    return value < min ? BAD : value;
  }

  private static void putIfAbsent(Metadata headers, Metadata.Key<String> key, long value,
      boolean present) {
    if (present && !headers.containsKey(key)) {
      headers.put(key, Long.toString(value));
    }
  }

  /**
   * {@code prices} as the value of {@code spillway-prices}, each id named by its method in {@code
   * interfaces}; {@code null} if no id has a method.
   */
  static String pricesText(InterfacePrices prices, InterfaceRegistry interfaces) {
    StringBuilder text = new StringBuilder(32 * prices.size());
    for (int k = 0; k < prices.size(); k++) {
      String name = interfaces.nameOf(prices.interfaceId(k));
      if (name != null) {
        text.append(text.isEmpty() ? "" : ",").append(name).append('=').append(prices.price(k));
      }
    }
    return text.isEmpty() ? null : text.toString();
  }

  /** The reasons collected while reading; allocated only when something is malformed. */
  private static final class Problems {
    private final StringBuilder text = new StringBuilder("ignored malformed spillway metadata:");

    static Problems add(Problems p, Metadata.Key<String> key, String value, String why) {
      Problems q = p == null ? new Problems() : p;
      String shown = value.length() > 40 ? value.substring(0, 40) + "..." : value;
      q.text.append(' ').append(key.name()).append("='").append(shown).append("' (").append(why)
          .append(");");
      return q;
    }

    @Override
    public String toString() {
      return text.substring(0, text.length() - 1);
    }
  }
}
