package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.spillway.api.testing.VirtualClock;
import org.junit.jupiter.api.Test;

/** A client's memory of the servers that shed its requests, in virtual time. */
class RetryPushbackTest {

  private static final long MS = 1_000_000;
  private static final String SERVER = "http://svc:8080";

  /**
   * Of two pushbacks from one server the later end holds, also when the clock's reading wraps past
   * {@code Long.MAX_VALUE} between the two ends (readings compare by difference, {@code Ticker}).
   */
  @Test
  void theLaterOfTwoPushbacksHoldsAcrossTheClocksWrap() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 30_000 * MS);
    RetryPushback pushback = new RetryPushback(clock);
    assertThat(pushback.onResponse(SERVER, 503, "10000", null)).isEqualTo(10_000);
    assertThat(pushback.onResponse(SERVER, 503, "60000", null)).isEqualTo(60_000);

    clock.advance(15_000 * MS); // past the first pushback, 45 s before the end of the second
    assertThatThrownBy(() -> pushback.checkBeforeSending(SERVER))
        .isInstanceOfSatisfying(SpillwayRejectedException.class,
            e -> assertThat(e.retryAfterMillis()).isEqualTo(45_000));
    clock.advance(45_000 * MS);
    pushback.checkBeforeSending(SERVER);
  }

  /**
   * A {@code Retry-After} is any run of digits (RFC 9110 §10.2.3): one too long for a {@code long}
   * asks for longer than the most honoured, and gets the most, not nothing.
   */
  @Test
  void aRetryAfterTooLongForALongIsHonouredForTheLongestHold() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 30_000 * MS);
    RetryPushback pushback = new RetryPushback(clock);
    assertThat(pushback.onResponse(SERVER, 503, null, "99999999999999999999")).isEqualTo(60_000);
    assertThat(pushback.onResponse("http://other:80", 503, "9223372036854775807", null))
        .isEqualTo(60_000);
    assertThatThrownBy(() -> pushback.checkBeforeSending(SERVER))
        .isInstanceOf(SpillwayRejectedException.class);
    // malformed values are still nothing: an HTTP date, a sign, a fraction
    assertThat(pushback.onResponse("http://third:80", 503, "-5", "Wed, 21 Oct 2015 07:28:00 GMT"))
        .isZero();
    assertThat(pushback.onResponse("http://third:80", 503, "1.5", "+x")).isZero();
    pushback.checkBeforeSending("http://third:80");
  }

  /**
   * A 429 holds the server off as a 503 does (RFC 6585 §4 lets it carry a Retry-After); any other
   * status holds nothing, whatever its headers say.
   */
  @Test
  void a429HoldsTheServerOffAsA503DoesAndNoOtherStatusDoes() {
    VirtualClock clock = new VirtualClock(0);
    RetryPushback pushback = new RetryPushback(clock);
    assertThat(pushback.onResponse(SERVER, 500, "5000", "5")).isZero();
    assertThat(pushback.onResponse(SERVER, 200, "5000", "5")).isZero();
    pushback.checkBeforeSending(SERVER);
    assertThat(pushback.onResponse(SERVER, 429, "250", "1")).isEqualTo(250);
    assertThatThrownBy(() -> pushback.checkBeforeSending(SERVER))
        .isInstanceOfSatisfying(SpillwayRejectedException.class,
            e -> assertThat(e.retryAfterMillis()).isEqualTo(250));
    clock.advance(250 * MS);
    pushback.checkBeforeSending(SERVER);
    assertThat(pushback.onResponse(SERVER, 429, null, "2")).isEqualTo(2_000);
  }

  /**
   * An application that calls many hosts remembers those that held it off within the last minute,
   * not every one that ever did: 10,000 servers that each shed one request a second apart leave
   * about the last minute's, and every hold still in force still holds.
   */
  @Test
  void serversWhoseHoldHasEndedAreForgottenWithoutBeingCalledAgain() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000 * MS);
    RetryPushback pushback = new RetryPushback(clock);
    for (int i = 0; i < 10_000; i++) {
      assertThat(pushback.onResponse("http://host-" + i + ":80", 503, "60000", null)).isEqualTo(60_000);
      clock.advance(1_000 * MS);
    }
    assertThat(pushback.rememberedServers()).isBetween(60, 2 * 60 + RetryPushback.SWEEP_MIN);
    for (int i = 9_941; i < 10_000; i++) {
      String server = "http://host-" + i + ":80";
      assertThatThrownBy(() -> pushback.checkBeforeSending(server))
          .isInstanceOf(SpillwayRejectedException.class);
    }
    pushback.checkBeforeSending("http://host-9939:80");
  }
}
