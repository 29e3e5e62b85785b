package io.spillway.grpc;

import io.spillway.api.ClientGate;
import io.spillway.api.InterfaceCall;
import io.spillway.api.InterfacePrices;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.api.TimestampedQueue;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A scriptable client gate: releases calls while fewer than {@code window} are in flight, expires
 * them after {@code timeoutNanos}, and records what the interceptor tells it. Confined to the
 * interceptor's lock (and the test thread, with direct executors).
 */
final class WindowClientGate implements ClientGate<Object> {

  record Answer(Status status, int interfaceId, int creditDelta, long price, int threshold) { }

  private final TimestampedQueue<Object> queue = new TimestampedQueue<>();
  private final long sessionId;
  private final long timeoutNanos;
  int window = Integer.MAX_VALUE;
  int inFlight;
  boolean refuse;
  long tokens;
  final List<Integer> polledInterfaces = new ArrayList<>();
  final List<Answer> answers = new ArrayList<>();
  final List<InterfacePrices> priceLists = new ArrayList<>();
  final List<Integer> controls = new ArrayList<>();

  WindowClientGate(long sessionId, long timeoutNanos) {
    this.sessionId = sessionId;
    this.timeoutNanos = timeoutNanos;
  }

  @Override
  public boolean offer(Object request, long arrivalNanos, long nowNanos) {
    if (refuse) {
      return false;
    }
    queue.offer(request, ClientGate.queuedSince(arrivalNanos, nowNanos));
    return true;
  }

  @Override
  public Object poll(long nowNanos, RequestMetadata header) {
    if (inFlight >= window || queue.isEmpty()) {
      return null;
    }
    Object next = queue.poll();
    inFlight++;
    polledInterfaces.add(((InterfaceCall) next).interfaceId());
    header.sessionId(sessionId).demand(queue.size()).tokens(tokens);
    return next;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    inFlight--;
    answers.add(new Answer(response.status(), response.interfaceId(), response.creditDelta(),
        response.price(), response.threshold()));
    priceLists.add(response.interfacePrices());
  }

  @Override
  public void onControl(ResponseMetadata control, long nowNanos) {
    controls.add(control.creditDelta());
  }

  @Override
  public int expire(long nowNanos, Consumer<? super Object> expired) {
    return queue.pollOlderThan(nowNanos, timeoutNanos, expired);
  }

  @Override
  public boolean remove(Object request, long nowNanos) {
    return queue.removeFirst(queued -> queued == request);
  }

  @Override
  public long nextWakeupNanos() {
    return queue.oldestEnqueueNanos() + timeoutNanos;
  }

  @Override
  public int queued() {
    return queue.size();
  }
}
