package io.spillway.grpc;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Records the headers of every call a server receives. */
final class HeaderRecorder implements ServerInterceptor {

  final List<Metadata> headers = new CopyOnWriteArrayList<>();

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
      Metadata requestHeaders, ServerCallHandler<ReqT, RespT> next) {
    Metadata copy = new Metadata();
    copy.merge(requestHeaders);
    headers.add(copy);
    return next.startCall(call, requestHeaders);
  }

  String last(Metadata.Key<String> key) {
    return headers.get(headers.size() - 1).get(key);
  }
}
