package io.spillway.api;

/**
 * A queued sub-request that carries the priority of the request it serves. DAGOR sets a request's
 * priority once, where it enters the system, and every sub-request inherits it, so that every
 * service in the call graph sheds the same requests (DAGOR, SoCC 2018 §4.2–4.3); a caller that
 * sheds locally ahead of an overloaded callee must judge the inherited priority, not draw a new one.
 *
 * <p>A {@link ClientGate} that assigns priorities reads this from the request it is offered;
 * requests that do not implement it (or return 0) get the gate's own priority.
 */
public interface InheritedPriority {

  /** The inherited priority, or 0 when the request has none. */
  int inheritedPriority();
}
