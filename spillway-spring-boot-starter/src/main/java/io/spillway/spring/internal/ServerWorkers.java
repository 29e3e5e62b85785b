package io.spillway.spring.internal;

/**
 * A servlet container's request workers as the starter measures them. Each container's customizer
 * is one; the one whose factory was customized is the container that runs (several may be on the
 * class path, one of them starts).
 */
public interface ServerWorkers {

  /** How the workers are measured, for the Actuator endpoint. */
  String route();

  /** Whether this container's factory was customized, that is, whether it is the one running. */
  boolean customized();
}
