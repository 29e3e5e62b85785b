package io.spillway.api;

/**
 * A queued request that knows which interface it calls. A {@link ClientGate} that keeps
 * per-interface state (Rajomon's client price table, rajomon-nsdi25 §3.3) reads the interface of
 * the request at the head of its queue through this; gates that do not care never look.
 *
 * <p>Interface ids are small non-negative integers assigned by the caller's side (for gRPC, from
 * the full method name); 0 is the default interface.
 */
public interface InterfaceCall {

  /** The id of the interface this request calls. */
  int interfaceId();
}
