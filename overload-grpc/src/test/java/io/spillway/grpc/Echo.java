package io.spillway.grpc;

import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** A test service, {@code test.Echo}, with hand-written descriptors and a String marshaller. */
final class Echo {

  static final String SERVICE = "test.Echo";

  static final MethodDescriptor.Marshaller<String> STRING = new MethodDescriptor.Marshaller<>() {
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

  static final MethodDescriptor<String, String> UNARY = method("Unary", MethodDescriptor.MethodType.UNARY);
  static final MethodDescriptor<String, String> OTHER = method("Other", MethodDescriptor.MethodType.UNARY);
  static final MethodDescriptor<String, String> CHAT = method("Chat", MethodDescriptor.MethodType.BIDI_STREAMING);

  static final ServiceDescriptor DESCRIPTOR =
      ServiceDescriptor.newBuilder(SERVICE).addMethod(UNARY).addMethod(OTHER).addMethod(CHAT).build();

  /** How the unary methods answer. */
  @FunctionalInterface
  interface Handler {
    void handle(String method, String request, StreamObserver<String> responses);
  }

  /** Answers "echo:" + request. */
  static final Handler ECHO = (method, request, out) -> {
    out.onNext("echo:" + request);
    out.onCompleted();
  };

  private Echo() { }

  private static MethodDescriptor<String, String> method(String name, MethodDescriptor.MethodType type) {
    return MethodDescriptor.<String, String>newBuilder().setType(type)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
        .setRequestMarshaller(STRING).setResponseMarshaller(STRING).build();
  }

  /** The service: both unary methods use {@code handler}; Chat echoes every message until half-close. */
  static ServerServiceDefinition service(Handler handler) {
    return ServerServiceDefinition.builder(DESCRIPTOR)
        .addMethod(UNARY, ServerCalls.asyncUnaryCall((req, out) -> handler.handle("Unary", req, out)))
        .addMethod(OTHER, ServerCalls.asyncUnaryCall((req, out) -> handler.handle("Other", req, out)))
        .addMethod(CHAT, ServerCalls.asyncBidiStreamingCall(out -> new StreamObserver<String>() {
          @Override
          public void onNext(String value) {
            out.onNext("echo:" + value);
          }

          @Override
          public void onError(Throwable t) { }

          @Override
          public void onCompleted() {
            out.onCompleted();
          }
        }))
        .build();
  }
}
