package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Raw client calls that keep what the tests look at: status, messages, trailers. */
final class Calls {

  /** How a call ended. */
  record Reply(Status status, List<String> messages, Metadata trailers) {
    String body() {
      return messages.isEmpty() ? null : messages.get(0);
    }

    String trailer(Metadata.Key<String> key) {
      return trailers.get(key);
    }
  }

  /** A started call: its future ends when the call closes. */
  record Handle(ClientCall<String, String> call, CompletableFuture<Reply> reply) {
    Reply await() {
      try {
        return reply.get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new AssertionError("call did not end", e);
      }
    }
  }

  private Calls() { }

  /** Starts a call with {@code headers}, sends {@code requests}, half-closes unless told not to. */
  static Handle start(Channel channel, MethodDescriptor<String, String> method, Metadata headers,
      boolean halfClose, String... requests) {
    ClientCall<String, String> call = channel.newCall(method, CallOptions.DEFAULT);
    CompletableFuture<Reply> reply = new CompletableFuture<>();
    List<String> messages = new ArrayList<>();
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onMessage(String message) {
        messages.add(message);
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        reply.complete(new Reply(status, List.copyOf(messages), trailers));
      }
    }, headers);
    call.request(Integer.MAX_VALUE);
    for (String request : requests) {
      call.sendMessage(request);
    }
    if (halfClose) {
      call.halfClose();
    }
    return new Handle(call, reply);
  }

  /** A unary call with {@code headers}. */
  static Handle unary(Channel channel, MethodDescriptor<String, String> method, Metadata headers,
      String request) {
    return start(channel, method, headers, true, request);
  }

  /** A unary call with no headers. */
  static Handle unary(Channel channel, MethodDescriptor<String, String> method, String request) {
    return unary(channel, method, new Metadata(), request);
  }

  /** Headers from key/value pairs. */
  static Metadata headers(Object... keyValues) {
    Metadata headers = new Metadata();
    for (int i = 0; i < keyValues.length; i += 2) {
      @SuppressWarnings("unchecked")
      Metadata.Key<String> key = (Metadata.Key<String>) keyValues[i];
      headers.put(key, String.valueOf(keyValues[i + 1]));
    }
    return headers;
  }
}
