package io.spillway.spring;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.spring.app.ManualTicker;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The readers of Spillway's HTTP headers against arbitrary values, as any client, proxy or server
 * may send them: the server's reader of a request's {@code Spillway-*} headers, and a client's
 * reader of a response's pushback ({@code Spillway-Retry-Pushback-Ms}, {@code Retry-After}) and of
 * its credit window ({@code Spillway-Credit-Window}). A
 * malformed value is reported and ignored, never thrown. Values are any bytes read as ISO-8859-1,
 * which is how servlet containers hand header values over (obs-text included). In the build
 * Jazzer replays the corpus in {@code HttpHeadersFuzzTestInputs/} and an empty input;
 * {@code ./spillway fuzz http-headers --seconds N} fuzzes for N seconds.
 */
class HttpHeadersFuzzTest {

  private static final List<String> NAMES = List.of(SpillwayHttpHeaders.SESSION,
      SpillwayHttpHeaders.REQUEST_ID, SpillwayHttpHeaders.DEMAND, SpillwayHttpHeaders.CREDIT_ID,
      SpillwayHttpHeaders.TOKENS, SpillwayHttpHeaders.PRIORITY, SpillwayHttpHeaders.FLAGS,
      SpillwayHttpHeaders.BUDGET);

  private final RetryPushback pushback = new RetryPushback(new ManualTicker());

  @FuzzTest(maxDuration = "2m")
  void anyValueIsReadOrReportedNeverThrown(FuzzedDataProvider data) {
    Map<String, String> headers = new HashMap<>();
    int n = data.consumeInt(0, 10);
    for (int i = 0; i < n; i++) {
      headers.put(NAMES.get(data.consumeInt(0, NAMES.size() - 1)), value(data));
    }
    SpillwayHttpHeaders.readRequest(headers::get, new RequestMetadata());
    int status = data.consumeInt(100, 599);
    String pushbackMs = data.consumeBoolean() ? value(data) : null;
    String retryAfter = data.consumeBoolean() ? value(data) : null;
    long wait = pushback.onResponse("http://server:80", status, pushbackMs, retryAfter);
    if (wait < 0) {
      throw new IllegalStateException("a negative wait: " + wait);
    }
    String window = value(data);
    ResponseMetadata read = new ResponseMetadata();
    String problem = SpillwayHttpHeaders.readResponse(
        name -> SpillwayHttpHeaders.CREDIT_WINDOW.equals(name) ? window : null, read);
    if (problem == null && read.creditSeq() == 0) {
      throw new IllegalStateException("a window taken without a stamp: " + window);
    }
    if (problem != null && read.creditSeq() != 0) {
      throw new IllegalStateException("a stamp taken from a malformed window: " + window);
    }
  }

  private static String value(FuzzedDataProvider data) {
    return new String(data.consumeBytes(data.consumeInt(0, 48)), StandardCharsets.ISO_8859_1);
  }
}
