package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.spillway.api.ResponseMetadata;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The codec of {@code Spillway-Credit-Window}: what the server writes, the client reads back, in
 * the form of gRPC's {@code spillway-credit-window}; a malformed value is reported and ignored.
 */
class SpillwayHttpHeadersTest {

  private static Map<String, String> written(ResponseMetadata response) {
    Map<String, String> headers = new HashMap<>();
    SpillwayHttpHeaders.writeResponse(response, headers::put);
    return headers;
  }

  /** Stamps across their range: the record number in the high half may be any int. */
  @ParameterizedTest
  @ValueSource(longs = {1L, 0xFFFF_FFFFL, 5L << 32 | 1, 0xFFFF_FFFF_0000_0001L,
      Long.MIN_VALUE | 7, -1L, Long.MAX_VALUE})
  void aStampedWindowRoundTrips(long seq) {
    for (int window : new int[] {0, 1, 37, Integer.MAX_VALUE}) {
      Map<String, String> headers = written(new ResponseMetadata().credit(-3, window, seq));
      assertThat(headers.get(SpillwayHttpHeaders.CREDIT_WINDOW))
          .isEqualTo(window + "/" + seq);
      ResponseMetadata read = new ResponseMetadata();
      assertThat(SpillwayHttpHeaders.readResponse(headers::get, read)).isNull();
      assertThat(read.creditDelta()).isEqualTo(-3);
      assertThat(read.creditWindow()).isEqualTo(window);
      assertThat(read.creditSeq()).isEqualTo(seq);
    }
  }

  @Test
  void anUnstampedMessageIsADeltaAlone() {
    Map<String, String> headers = written(new ResponseMetadata().creditDelta(2));
    assertThat(headers).doesNotContainKey(SpillwayHttpHeaders.CREDIT_WINDOW);
    ResponseMetadata read = new ResponseMetadata().credit(0, 9, 9);
    assertThat(SpillwayHttpHeaders.readResponse(headers::get, read)).isNull();
    assertThat(read.creditDelta()).isEqualTo(2);
    assertThat(read.creditSeq()).isZero();
  }

  @Test
  void surroundingSpacesAreAllowedAsInAnyHeaderValue() {
    ResponseMetadata read = new ResponseMetadata();
    assertThat(SpillwayHttpHeaders.readCreditWindow("  4/12 ", read)).isNull();
    assertThat(read.creditWindow()).isEqualTo(4);
    assertThat(read.creditSeq()).isEqualTo(12);
  }

  /**
   * A malformed value is reported and ignored, never thrown: the answer's delta still counts, and
   * no window or stamp is taken from it.
   */
  @ParameterizedTest
  @ValueSource(strings = {"", " ", "5", "5/", "/7", "5 7", "5/7/9", "5//7", "5/0", "a/b", "5/7x",
      "0x5/7", "2147483648/7", "-2147483649/7", "5/9223372036854775808",
      "5/99999999999999999999999", "\u0663/7", "5,7", "5;seq=7", "5/-"})
  void aMalformedWindowIsReportedAndIgnored(String value) {
    Map<String, String> headers = Map.of(SpillwayHttpHeaders.STATUS, "0",
        SpillwayHttpHeaders.CREDIT_DELTA, "2", SpillwayHttpHeaders.CREDIT_WINDOW, value);
    ResponseMetadata read = new ResponseMetadata();
    assertThat(SpillwayHttpHeaders.readResponse(headers::get, read))
        .containsIgnoringCase(SpillwayHttpHeaders.CREDIT_WINDOW);
    assertThat(read.creditDelta()).isEqualTo(2);
    assertThat(read.creditWindow()).isZero();
    assertThat(read.creditSeq()).isZero();
  }

  @Test
  void aMalformedDeltaBesideAGoodWindowReportsOnlyTheDelta() {
    Map<String, String> headers = Map.of(SpillwayHttpHeaders.STATUS, "0",
        SpillwayHttpHeaders.CREDIT_DELTA, "two", SpillwayHttpHeaders.CREDIT_WINDOW, "3/8");
    ResponseMetadata read = new ResponseMetadata();
    assertThat(SpillwayHttpHeaders.readResponse(headers::get, read))
        .containsIgnoringCase(SpillwayHttpHeaders.CREDIT_DELTA)
        .doesNotContainIgnoringCase(SpillwayHttpHeaders.CREDIT_WINDOW);
    assertThat(read.creditDelta()).isZero();
    assertThat(read.creditWindow()).isEqualTo(3);
    assertThat(read.creditSeq()).isEqualTo(8);
  }

  @Test
  void aWindowIsWrittenOnlyWithAStamp() {
    assertThatThrownBy(() -> SpillwayHttpHeaders.creditWindow(1, 0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
