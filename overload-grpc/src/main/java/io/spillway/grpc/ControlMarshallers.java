package io.spillway.grpc;

import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/** The message codecs of {@code spillway.Control}: no protobuf, just bytes. Stateless. */
final class ControlMarshallers {

  static final byte[] EMPTY = new byte[0];

  /** Raw bytes; the control requests and acknowledgements are empty. */
  static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try (stream) {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw Status.INTERNAL.withDescription("spillway: reading a control message").withCause(e)
            .asRuntimeException();
      }
    }
  };

  /**
   * One message of a session's credit stream: the signed change of its window and, from a gate that
   * stamps its credit messages, the window after the change with its stamp ({@code seq} 0: none;
   * {@link io.spillway.api.ResponseMetadata#creditSeq()}).
   */
  record CreditMessage(int delta, int window, long seq) { }

  /**
   * A credit message as ASCII: the delta in decimal, then, if stamped, a space and {@code
   * window/stamp} as the {@code spillway-credit-window} trailer writes it. A message of the delta
   * alone reads as unstamped.
   */
  static final MethodDescriptor.Marshaller<CreditMessage> CREDIT = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(CreditMessage value) {
      String text = value.seq() == 0 ? Integer.toString(value.delta())
          : value.delta() + " " + SpillwayMetadata.formatCreditWindow(value.window(), value.seq());
      return new ByteArrayInputStream(text.getBytes(StandardCharsets.US_ASCII));
    }

    @Override
    public CreditMessage parse(InputStream stream) {
      String text = new String(BYTES.parse(stream), StandardCharsets.US_ASCII);
      int space = text.indexOf(' ');
      String deltaText = space < 0 ? text : text.substring(0, space);
      long delta = SpillwayMetadata.parseLong(deltaText, Integer.MIN_VALUE);
      io.spillway.api.ResponseMetadata stamp = new io.spillway.api.ResponseMetadata();
      if (delta == Long.MIN_VALUE || delta > Integer.MAX_VALUE
          || (space >= 0 && !SpillwayMetadata.readCreditWindow(text.substring(space + 1), stamp))) {
        throw Status.INTERNAL.withDescription("spillway: malformed credit message '" + text + "'")
            .asRuntimeException();
      }
      return new CreditMessage((int) delta, stamp.creditWindow(), stamp.creditSeq());
    }
  };

  private ControlMarshallers() { }
}
