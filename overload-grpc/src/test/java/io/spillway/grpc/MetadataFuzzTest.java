package io.spillway.grpc;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.grpc.Metadata;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import java.util.List;

/**
 * The readers of Spillway's gRPC metadata against arbitrary values under every key they read, as
 * any client (or a proxy) may send them: a malformed value is reported and ignored, never thrown.
 * In the build Jazzer replays the corpus in {@code MetadataFuzzTestInputs/} and an empty input;
 * {@code ./spillway fuzz metadata --seconds N} fuzzes for N seconds.
 */
class MetadataFuzzTest {

  private static final List<Metadata.Key<String>> KEYS = List.of(SpillwayMetadata.SESSION,
      SpillwayMetadata.REQUEST_ID, SpillwayMetadata.DEMAND, SpillwayMetadata.CREDIT_ID,
      SpillwayMetadata.TOKENS, SpillwayMetadata.PRIORITY, SpillwayMetadata.FLAGS,
      SpillwayMetadata.BUDGET, SpillwayMetadata.STATUS, SpillwayMetadata.CREDIT_DELTA,
      SpillwayMetadata.PRICE, SpillwayMetadata.PRICES, SpillwayMetadata.THRESHOLD);
  private static final InterfaceRegistry INTERFACES =
      InterfaceRegistry.of("demo.Echo/Unary", "hotel.Search/Nearby");

  @FuzzTest(maxDuration = "2m")
  void anyValueIsReadOrReportedNeverThrown(FuzzedDataProvider data) {
    Metadata headers = new Metadata();
    int n = data.consumeInt(0, 8);
    for (int i = 0; i < n; i++) {
      Metadata.Key<String> key = KEYS.get(data.consumeInt(0, KEYS.size() - 1));
      String value = data.consumeAsciiString(64);
      try {
        headers.put(key, value);
      } catch (IllegalArgumentException notAHeaderValue) {
        // gRPC itself refuses control characters in ASCII metadata: such a value never arrives
      }
    }
    RequestMetadata request = new RequestMetadata();
    SpillwayMetadata.readRequest(headers, request);
    ResponseMetadata response = new ResponseMetadata();
    SpillwayMetadata.readResponse(headers, response, INTERFACES);
    SpillwayMetadata.readResponse(headers, response);
  }
}
