package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.Status;

/**
 * A session's open {@code spillway.Control/Credits} call: response headers mean the server has
 * registered the stream; each message is an explicit credit. Events go to the session, which
 * ignores those of a subscription it has replaced.
 */
final class CreditSubscription extends ClientCall.Listener<ControlMarshallers.CreditMessage> {

  private final SpillwayClientInterceptor session;
  /** The call, published once started: gRPC refuses a cancel that overtakes a call's start. */
  private volatile ClientCall<byte[], ControlMarshallers.CreditMessage> call;
  /** Set by {@link #cancel}; a start that finishes after it cancels its own call. */
  private volatile boolean cancelled;

  CreditSubscription(SpillwayClientInterceptor session) {
    this.session = session;
  }

  /**
   * Opens the stream in the root {@link Context}: it belongs to the session, not to the call that
   * happened to open it, whose context is cancelled when that call ends.
   */
  void start(Channel channel, CallOptions options, Metadata headers) {
    Context previous = Context.ROOT.attach();
    try {
      ClientCall<byte[], ControlMarshallers.CreditMessage> c = channel.newCall(SpillwayControlService.CREDITS, options);
      c.start(this, headers);
      call = c; // before any message: onMessage asks the call for the next
      if (cancelled) { // the session closed while the call started (both sides write, then read)
        c.cancel("spillway: client session closed", null);
        return;
      }
      c.request(1);
      c.sendMessage(ControlMarshallers.EMPTY);
      c.halfClose();
    } finally {
      Context.ROOT.detach(previous);
    }
  }

  void cancel() {
    cancelled = true;
    ClientCall<byte[], ControlMarshallers.CreditMessage> c = call;
    if (c != null) {
      c.cancel("spillway: client session closed", null);
    }
  }

  @Override
  public void onHeaders(Metadata headers) {
    session.onSubscribed(this);
  }

  @Override
  public void onMessage(ControlMarshallers.CreditMessage credit) {
    call.request(1);
    session.onCredit(this, credit);
  }

  @Override
  public void onClose(Status status, Metadata trailers) {
    session.onSubscriptionClosed(this, status);
  }
}
