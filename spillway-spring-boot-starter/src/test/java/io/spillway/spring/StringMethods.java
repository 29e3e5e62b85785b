package io.spillway.spring;

import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** Unary gRPC methods whose messages are UTF-8 strings, for tests that need no generated stubs. */
public final class StringMethods {

  private static final MethodDescriptor.Marshaller<String> UTF8 = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };

  private StringMethods() { }

  /** A unary method named {@code fullName} ({@code service/method}) of strings. */
  public static MethodDescriptor<String, String> unary(String fullName) {
    return MethodDescriptor.<String, String>newBuilder().setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(fullName).setRequestMarshaller(UTF8).setResponseMarshaller(UTF8).build();
  }
}
