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

  /** A credit message: the signed credit delta as ASCII decimal, like the metadata values. */
  static final MethodDescriptor.Marshaller<Integer> CREDIT = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(Integer value) {
      return new ByteArrayInputStream(Integer.toString(value).getBytes(StandardCharsets.US_ASCII));
    }

    @Override
    public Integer parse(InputStream stream) {
      String text = new String(BYTES.parse(stream), StandardCharsets.US_ASCII);
      long delta = SpillwayMetadata.parseLong(text, Integer.MIN_VALUE);
      if (delta == Long.MIN_VALUE || delta > Integer.MAX_VALUE) {
        throw Status.INTERNAL.withDescription("spillway: malformed credit message '" + text + "'")
            .asRuntimeException();
      }
      return (int) delta;
    }
  };

  private ControlMarshallers() { }
}
