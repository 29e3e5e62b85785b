package io.spillway.transport;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.transport.internal.Frame;
import io.spillway.transport.internal.FrameException;

/**
 * The frame decoder against arbitrary bytes, as the server's and the client's decoders walk a
 * stream: a frame is either refused with {@link FrameException} or read whole, never anything
 * else (no other exception, no read past the buffer). In the build Jazzer replays the corpus in
 * {@code FrameFuzzTestInputs/} (the inputs a fuzzing run kept for new coverage) and an empty
 * input; {@code ./spillway fuzz frame --seconds N} fuzzes for N seconds (about 480,000 inputs a
 * second on one core here), {@code JAZZER_FUZZ=1 ./mvnw -B -pl netty-native-transport -am test
 * -Dtest=FrameFuzzTest -Dsurefire.failIfNoSpecifiedTests=false} for {@code maxDuration}.
 */
class FrameFuzzTest {

  @FuzzTest(maxDuration = "5m")
  void aStreamOfBytesIsReadOrRefusedNeverAnythingElse(byte[] data) {
    ByteBuf in = Unpooled.wrappedBuffer(data);
    RequestMetadata request = new RequestMetadata();
    ResponseMetadata response = new ResponseMetadata();
    try {
      while (in.readableBytes() >= Frame.HEADER_SIZE) {
        int type = Frame.validate(in, 4096);
        long length = Frame.payloadLength(in);
        if (length < 0 || length > 4096) {
          throw new AssertionError("validate let through a payload length of " + length);
        }
        if (in.readableBytes() < Frame.HEADER_SIZE + length) {
          break; // a partial frame waits for more bytes
        }
        switch (type) {
          case Frame.TYPE_REQUEST, Frame.TYPE_DEMAND, Frame.TYPE_DEREGISTER -> Frame.readRequest(in, request);
          case Frame.TYPE_RESPONSE, Frame.TYPE_CREDIT -> Frame.readResponse(in, response);
          default -> throw new AssertionError("validate let through type " + type);
        }
        in.skipBytes(Frame.HEADER_SIZE + (int) length);
      }
    } catch (FrameException refused) {
      // malformed input is refused: the connection carrying it is closed
    } finally {
      in.release();
    }
  }
}
