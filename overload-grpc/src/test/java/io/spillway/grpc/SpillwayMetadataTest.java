package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Metadata;
import io.spillway.api.InterfacePrices;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import org.junit.jupiter.api.Test;

class SpillwayMetadataTest {

  @Test
  void requestFieldsSurviveTheRoundTrip() {
    RequestMetadata sent = new RequestMetadata().sessionId(-7).requestId(1L << 40).demand(12)
        .creditId(99).tokens(100).priority(3).flags(RequestMetadata.FLAG_REGISTER)
        .budgetNanos(250_000);
    Metadata headers = new Metadata();
    SpillwayMetadata.writeRequest(sent, headers);

    assertEquals("100", headers.get(SpillwayMetadata.TOKENS), "plain ASCII decimal, as ghz -m sends it");
    RequestMetadata read = new RequestMetadata().interfaceId(5);
    assertNull(SpillwayMetadata.readRequest(headers, read));
    assertEquals(sent.toString(), read.toString());
  }

  @Test
  void defaultFieldsAreLeftOut() {
    Metadata headers = new Metadata();
    SpillwayMetadata.writeRequest(new RequestMetadata().sessionId(4), headers);
    assertEquals(1, headers.keys().size(), headers.toString());
    RequestMetadata read = new RequestMetadata();
    SpillwayMetadata.readRequest(headers, read);
    assertEquals(Long.MAX_VALUE, read.budgetNanos(), "no budget key means no budget");
  }

  @Test
  void malformedValuesCountAsAbsentAndSayWhy() {
    Metadata headers = Calls.headers(SpillwayMetadata.SESSION, "12x", SpillwayMetadata.TOKENS, "abc",
        SpillwayMetadata.DEMAND, "-1", SpillwayMetadata.PRIORITY, "", SpillwayMetadata.BUDGET,
        "99999999999999999999", SpillwayMetadata.FLAGS, "7");
    RequestMetadata read = new RequestMetadata();

    String reason = SpillwayMetadata.readRequest(headers, read);

    assertEquals(0, read.sessionId());
    assertEquals(0, read.tokens());
    assertEquals(0, read.demand());
    assertEquals(0, read.priority());
    assertEquals(Long.MAX_VALUE, read.budgetNanos());
    assertEquals(RequestMetadata.FLAG_REGISTER | RequestMetadata.FLAG_DEREGISTER, read.flags(),
        "unknown flag bits are ignored, known ones kept");
    assertNotNull(reason);
    assertTrue(reason.contains("spillway-tokens='abc'"), reason);
    assertTrue(reason.contains("spillway-session='12x'"), reason);
    assertTrue(reason.contains("spillway-demand='-1' (not an int >= 0)"), reason);
    assertTrue(reason.contains("spillway-budget-ns"), reason);
    assertFalse(reason.contains("spillway-flags"), reason);
  }

  @Test
  void blanksAndSignsAreAccepted() {
    Metadata headers = Calls.headers(SpillwayMetadata.TOKENS, " 100 ", SpillwayMetadata.PRIORITY, "+5",
        SpillwayMetadata.SESSION, String.valueOf(Long.MAX_VALUE));
    RequestMetadata read = new RequestMetadata();
    assertNull(SpillwayMetadata.readRequest(headers, read));
    assertEquals(100, read.tokens());
    assertEquals(5, read.priority());
    assertEquals(Long.MAX_VALUE, read.sessionId());
  }

  @Test
  void decimalParsingRejectsOverflowAndJunk() {
    assertEquals(Long.MAX_VALUE, SpillwayMetadata.parseLong("9223372036854775807", 0));
    assertEquals(-Long.MAX_VALUE, SpillwayMetadata.parseLong("-9223372036854775807", -Long.MAX_VALUE));
    assertEquals(Long.MIN_VALUE, SpillwayMetadata.parseLong("9223372036854775808", 0));
    assertEquals(Long.MIN_VALUE, SpillwayMetadata.parseLong("-", Long.MIN_VALUE + 1));
    assertEquals(Long.MIN_VALUE, SpillwayMetadata.parseLong("1e3", 0));
    assertEquals(Long.MIN_VALUE, SpillwayMetadata.parseLong("-3", 0), "below the field's minimum");
    assertEquals(-3, SpillwayMetadata.parseLong("-3", Integer.MIN_VALUE));
  }

  @Test
  void theApplicationsOwnHeaderWins() {
    Metadata headers = Calls.headers(SpillwayMetadata.PRIORITY, "1");
    SpillwayMetadata.writeRequest(new RequestMetadata().priority(77).tokens(5), headers);
    assertEquals("1", headers.get(SpillwayMetadata.PRIORITY));
    assertEquals("5", headers.get(SpillwayMetadata.TOKENS));
  }

  @Test
  void responseFieldsSurviveTheRoundTrip() {
    ResponseMetadata sent = new ResponseMetadata().status(Status.REJECTED_PRICE).creditDelta(-3)
        .creditId(17).price(42).threshold(9);
    Metadata trailers = new Metadata();
    SpillwayMetadata.writeResponse(sent, trailers);
    assertTrue(SpillwayMetadata.hasResponse(trailers));

    ResponseMetadata read = new ResponseMetadata().interfaceId(6);
    assertNull(SpillwayMetadata.readResponse(trailers, read));
    assertEquals(Status.REJECTED_PRICE, read.status());
    assertEquals(-3, read.creditDelta());
    assertEquals(17, read.creditId());
    assertEquals(42, read.price());
    assertEquals(9, read.threshold());
    assertEquals(6, read.interfaceId(), "the interface id is the reader's, not the wire's");
  }

  @Test
  void aStampedCreditWindowSurvivesTheRoundTripAndAMalformedOneIsIgnoredWithAReason() {
    long seq = (-5L << 32) | 9; // a record number with the top bit set: a negative stamp
    Metadata trailers = new Metadata();
    SpillwayMetadata.writeResponse(new ResponseMetadata().credit(2, 6, seq), trailers);
    ResponseMetadata read = new ResponseMetadata();
    assertNull(SpillwayMetadata.readResponse(trailers, read));
    assertEquals(2, read.creditDelta());
    assertEquals(6, read.creditWindow());
    assertEquals(seq, read.creditSeq());
    for (String bad : new String[] {"6", "6/0", "x/5", "6/", "99999999999/5", "6/5/4"}) {
      Metadata t = Calls.headers(SpillwayMetadata.CREDIT_WINDOW, bad);
      ResponseMetadata r = new ResponseMetadata();
      String problem = SpillwayMetadata.readResponse(t, r);
      assertTrue(problem != null && problem.contains("spillway-credit-window"), bad + ": " + problem);
      assertEquals(0, r.creditSeq(), bad);
    }
  }

  @Test
  void aCreditStreamMessageCarriesItsStampOrTheDeltaAlone() throws Exception {
    for (ControlMarshallers.CreditMessage m : new ControlMarshallers.CreditMessage[] {
        new ControlMarshallers.CreditMessage(-3, 0, 0),
        new ControlMarshallers.CreditMessage(1, 4, (3L << 32) | 2)}) {
      assertEquals(m, ControlMarshallers.CREDIT.parse(ControlMarshallers.CREDIT.stream(m)));
    }
    assertEquals(new ControlMarshallers.CreditMessage(7, 0, 0), ControlMarshallers.CREDIT.parse(
        new java.io.ByteArrayInputStream("7".getBytes(java.nio.charset.StandardCharsets.US_ASCII))));
    assertThrows(io.grpc.StatusRuntimeException.class, () -> ControlMarshallers.CREDIT.parse(
        new java.io.ByteArrayInputStream("7 x".getBytes(java.nio.charset.StandardCharsets.US_ASCII))));
  }

  @Test
  void interfacePricesTravelByMethodNameBetweenRegistriesThatNumberThemDifferently() {
    InterfaceRegistry server = InterfaceRegistry.of("hotel.Frontend/Search", "hotel.Frontend/Reserve",
        "hotel.Frontend/Login");
    InterfaceRegistry client = InterfaceRegistry.of("hotel.Frontend/Reserve", "hotel.Frontend/Search");
    ResponseMetadata sent = new ResponseMetadata().price(120).interfacePrices(InterfacePrices.of(
        new int[] {0, 1, 2, 3}, new long[] {9, 120, 40, 7}));
    Metadata trailers = new Metadata();
    SpillwayMetadata.writeResponse(sent, trailers, server);
    assertEquals("hotel.Frontend/Search=120,hotel.Frontend/Reserve=40,hotel.Frontend/Login=7",
        trailers.get(SpillwayMetadata.PRICES), "id 0 names no method: left out");

    ResponseMetadata read = new ResponseMetadata().interfaceId(2);
    assertNull(SpillwayMetadata.readResponse(trailers, read, client));
    assertEquals(InterfacePrices.of(new int[] {2, 1}, new long[] {120, 40}), read.interfacePrices(),
        "in the client's ids; Login, which this client never called, is dropped");
    assertEquals(120, read.price());
    assertEquals(2, client.size(), "reading assigned no id");

    ResponseMetadata without = new ResponseMetadata();
    assertNull(SpillwayMetadata.readResponse(trailers, without));
    assertEquals(InterfacePrices.NONE, without.interfacePrices(), "no registry, no list");
    Metadata plain = new Metadata();
    SpillwayMetadata.writeResponse(sent, plain);
    assertNull(plain.get(SpillwayMetadata.PRICES));
  }

  @Test
  void malformedPricePairsAreReportedAndTheRestKept() {
    InterfaceRegistry client = InterfaceRegistry.of("a.S/One", "a.S/Two");
    Metadata trailers = new Metadata();
    trailers.put(SpillwayMetadata.STATUS, "0");
    trailers.put(SpillwayMetadata.PRICES, "a.S/One=5,a.S/Two=-3,=4,junk,,a.S/One=6,a.S/Two= 8 ");
    ResponseMetadata read = new ResponseMetadata();
    String problem = SpillwayMetadata.readResponse(trailers, read, client);
    assertNotNull(problem);
    assertTrue(problem.contains("'a.S/Two=-3'") && problem.contains("'=4'")
        && problem.contains("'junk'"), problem);
    assertEquals(InterfacePrices.of(new int[] {1, 2}, new long[] {5, 8}), read.interfacePrices(),
        "a repeated method keeps its first price");
  }

  @Test
  void aResponseWithoutPriceHasNone() {
    Metadata trailers = new Metadata();
    SpillwayMetadata.writeResponse(new ResponseMetadata(), trailers);
    assertEquals("0", trailers.get(SpillwayMetadata.STATUS));
    assertEquals(1, trailers.keys().size());
    ResponseMetadata read = new ResponseMetadata().price(5);
    SpillwayMetadata.readResponse(trailers, read);
    assertFalse(read.hasPrice());
    assertFalse(SpillwayMetadata.hasResponse(new Metadata()));
  }

  @Test
  void anUnknownStatusIsReportedAndReadAsOk() {
    Metadata trailers = Calls.headers(SpillwayMetadata.STATUS, "42", SpillwayMetadata.CREDIT_DELTA, "x");
    ResponseMetadata read = new ResponseMetadata();
    String reason = SpillwayMetadata.readResponse(trailers, read);
    assertEquals(Status.OK, read.status());
    assertEquals(0, read.creditDelta());
    assertTrue(reason.contains("spillway-status='42' (not a known status code)"), reason);
    assertTrue(reason.contains("spillway-credit-delta='x'"), reason);
  }

  @Test
  void rejectDescriptionsNameTheReason() {
    assertEquals("spillway: rejected (price 42)", SpillwayMetadata.describeReject(
        new ResponseMetadata().status(Status.REJECTED_PRICE).price(42)));
    assertEquals("spillway: rejected (aqm)", SpillwayMetadata.describeReject(
        new ResponseMetadata().status(Status.REJECTED_AQM)));
    assertEquals("spillway: rejected (no credit)", SpillwayMetadata.describeReject(
        new ResponseMetadata().status(Status.REJECTED_NO_CREDIT)));
    assertEquals("spillway: rejected (limit, threshold 17)", SpillwayMetadata.describeReject(
        new ResponseMetadata().status(Status.REJECTED_LIMIT).threshold(17)));
    assertEquals("spillway: rejected (budget)", SpillwayMetadata.describeReject(
        new ResponseMetadata().status(Status.REJECTED_BUDGET)));
  }
}
