package io.spillway.api;

/** How an admitted request ended. Every permit ends exactly once, with one of these. */
public enum Outcome {
  /** The handler finished and a response was sent. */
  SUCCESS,
  /** The request was rejected (at admission, or later by AQM) and a reject was sent. */
  DROPPED,
  /** The handler gave up because its budget ran out (ASQM); a fast reject was sent. */
  ABORTED,
  /** The request's deadline passed before it finished. */
  TIMED_OUT,
  /** The handler failed with an error; an error response was sent. */
  FAILED
}
