package io.spillway.spring.internal;

import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * Tomcat's executor on the virtual-thread route: a connection's asynchronous I/O continuations
 * run on platform threads, everything else (a request's processing: an HTTP/1.1 socket event, an
 * HTTP/2 stream, an async servlet's task) on virtual threads.
 *
 * <p><b>Why.</b> Tomcat completes the non-blocking reads and writes of an HTTP/2 connection (its
 * default, asynchronous I/O) through the same executor as its requests: each completed frame read
 * is a task, and it is that task that parses the frames and hands each new stream to the executor.
 * The JDK's virtual-thread scheduler is one FIFO per carrier and does not time-slice, so a
 * connection's next read waits behind every request it already fed. Meanwhile the requests the
 * client has sent stay in the kernel's socket buffer, where no stage measures them: the queueing
 * signal reads a few milliseconds while requests wait tens before the filter sees them, and under
 * twice the capacity almost none are answered within the SLO (docs/results/spring.md, "Virtual
 * threads"). Breakwater's signal is the delay of the queues past the network stack, and the stack
 * itself runs ahead of the requests (breakwater-osdi20 §3.1, §4); here a platform thread woken for
 * a connection gets a core from the kernel's scheduler, which time-slices it in among the
 * carriers, instead of waiting its turn in the carriers' queue. The continuations run Tomcat's
 * framing code, not the application's, and are short.
 *
 * <p>Tasks are told apart by class, once per class: Tomcat's continuations are subclasses of
 * {@code org.apache.tomcat.util.net.SocketWrapperBase$OperationState}, a protected type named here
 * by its binary name.
 *
 * <p>Thread-safe.
 */
public final class TomcatTaskRouter implements Executor {

  /** The binary name of the type of Tomcat's asynchronous I/O continuations. */
  static final String CONTINUATION = "org.apache.tomcat.util.net.SocketWrapperBase$OperationState";

  private static final ClassValue<Boolean> CONNECTION_IO = new ClassValue<>() {
    @Override
    protected Boolean computeValue(Class<?> type) {
      for (Class<?> c = type; c != null; c = c.getSuperclass()) {
        if (c.getName().equals(CONTINUATION)) {
          return Boolean.TRUE;
        }
      }
      return Boolean.FALSE;
    }
  };

  private final Executor requests;
  private final Executor connections;

  /**
   * @param requests runs requests' tasks: virtual threads
   * @param connections runs connections' I/O continuations: platform threads
   */
  public TomcatTaskRouter(Executor requests, Executor connections) {
    this.requests = Objects.requireNonNull(requests, "requests");
    this.connections = Objects.requireNonNull(connections, "connections");
  }

  /** Whether tasks of {@code type} are a connection's I/O continuations (platform threads). */
  static boolean isConnectionIo(Class<?> type) {
    return CONNECTION_IO.get(type);
  }

  @Override
  public void execute(Runnable task) {
    (isConnectionIo(task.getClass()) ? connections : requests).execute(task);
  }

  @Override
  public String toString() {
    return "TomcatTaskRouter[requests=" + requests + ", connections=" + connections + "]";
  }
}
