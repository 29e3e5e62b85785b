package io.spillway.sim;

import io.spillway.api.ControlChannel;
import io.spillway.api.ResponseMetadata;

/**
 * A simulated server's explicit credit messages, each built whole, stamp included ({@link
 * ResponseMetadata#creditSeq()}), as a real transport carries it, and handed to the simulation
 * that delivers it. Stateless.
 */
@FunctionalInterface
interface CreditMessages {

  /** Delivers {@code message}, an explicit credit to {@code sessionId}. */
  void deliver(long sessionId, ResponseMetadata message);

  /** The control channel of a gate whose explicit credits go to {@code messages}. */
  static ControlChannel channel(CreditMessages messages) {
    return new ControlChannel() {
      @Override
      public void sendCredit(long sessionId, int creditDelta) {
        messages.deliver(sessionId, new ResponseMetadata().sessionId(sessionId).creditDelta(creditDelta));
      }

      @Override
      public void sendCredit(long sessionId, int creditDelta, int window, long seq) {
        messages.deliver(sessionId,
            new ResponseMetadata().sessionId(sessionId).credit(creditDelta, window, seq));
      }
    };
  }
}
