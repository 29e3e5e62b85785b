package io.spillway.transport.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import org.junit.jupiter.api.Test;

class FrameTest {

  @Test
  void requestHeaderRoundTrips() {
    RequestMetadata m = new RequestMetadata().sessionId(Long.MAX_VALUE).requestId(-5).demand(17)
        .creditId(99).tokens(12345).interfaceId(7).budgetNanos(80_000).priority(128)
        .flags(RequestMetadata.FLAG_REGISTER);
    ByteBuf buf = Unpooled.buffer();
    Frame.writeRequest(buf, Frame.TYPE_REQUEST, m, 3);
    buf.writeBytes(new byte[] {1, 2, 3});
    assertEquals(Frame.HEADER_SIZE + 3, buf.readableBytes());
    assertEquals(Frame.TYPE_REQUEST, Frame.validate(buf, 10));
    RequestMetadata back = Frame.readRequest(buf, new RequestMetadata());
    assertEquals(m.toString(), back.toString());
    assertEquals(0, buf.readerIndex(), "decoding does not move the reader");
    buf.release();
  }

  @Test
  void responseHeaderRoundTrips() {
    ResponseMetadata m = new ResponseMetadata().sessionId(3).requestId(4).status(Status.REJECTED_AQM)
        .creditDelta(-2).creditId(8).price(1_000).threshold(64);
    ByteBuf buf = Unpooled.buffer();
    Frame.writeResponse(buf, Frame.TYPE_RESPONSE, m, 0);
    Frame.validate(buf, 0);
    assertEquals(m.toString(), Frame.readResponse(buf, new ResponseMetadata()).toString());
    buf.release();
  }

  @Test
  void aStampedCreditWindowRoundTripsInResponsesAndCreditFrames() {
    for (int type : new int[] {Frame.TYPE_RESPONSE, Frame.TYPE_CREDIT}) {
      ResponseMetadata m = new ResponseMetadata().sessionId(3).requestId(4)
          .credit(-2, 5, (7L << 32) | 12);
      ByteBuf buf = Unpooled.buffer();
      Frame.writeResponse(buf, type, m, 0);
      Frame.validate(buf, 0);
      ResponseMetadata read = Frame.readResponse(buf, new ResponseMetadata());
      assertEquals(-2, read.creditDelta());
      assertEquals(5, read.creditWindow());
      assertEquals((7L << 32) | 12, read.creditSeq());
      buf.release();
    }
  }

  private static ByteBuf header() {
    ByteBuf buf = Unpooled.buffer();
    Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata(), 0);
    return buf;
  }

  @Test
  void malformedHeadersAreRejectedWithAReason() {
    ByteBuf bad = header();
    bad.setShort(0, 0x1234);
    assertTrue(assertThrows(FrameException.class, () -> Frame.validate(bad, 100)).getMessage().contains("magic"));
    ByteBuf version = header();
    version.setByte(2, 9);
    assertTrue(assertThrows(FrameException.class, () -> Frame.validate(version, 100)).getMessage().contains("version"));
    ByteBuf type = header();
    type.setByte(3, 42);
    assertTrue(assertThrows(FrameException.class, () -> Frame.validate(type, 100)).getMessage().contains("type"));
    ByteBuf big = header();
    big.setInt(60, 101);
    assertTrue(assertThrows(FrameException.class, () -> Frame.validate(big, 100)).getMessage().contains("exceeds"));
    ByteBuf huge = header();
    huge.setInt(60, -1); // 4 GiB unsigned
    assertThrows(FrameException.class, () -> Frame.validate(huge, Integer.MAX_VALUE));
    ByteBuf control = Unpooled.buffer();
    Frame.writeResponse(control, Frame.TYPE_CREDIT, new ResponseMetadata(), 5);
    assertThrows(FrameException.class, () -> Frame.validate(control, 100));
    ByteBuf status = Unpooled.buffer();
    Frame.writeResponse(status, Frame.TYPE_RESPONSE, new ResponseMetadata(), 0);
    status.setByte(6, 200);
    assertThrows(FrameException.class, () -> Frame.readResponse(status, new ResponseMetadata()));
  }
}
