package io.spillway.harness;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.spillway.api.LockWaitRule;
import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedLock;
import io.spillway.sim.Scenario;
import io.spillway.transport.RequestHandler;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The synthetic service of Protego's two-path experiment (protego-nsdi23 §2, Fig. 1) on real
 * threads and real locks: a request takes mutex path i with the scenario's probability ({@code
 * paths}) and holds that path's {@link BudgetedLock} while it spins for its service time.
 *
 * <p>A request is 16 bytes: its service time in nanoseconds, then a 64-bit draw that picks its path
 * (the load generator takes it from its seeded stream, so a request's path is fixed by the
 * scenario's seed, as in the simulator). A request of 8 bytes derives the draw from its service
 * time.
 *
 * <p>Under ASQM ({@code budgeted}) the request acquires with {@link
 * BudgetedLock#acquireWithinBudget()}: if the mutex's queueing delay (now − enqueue time of its
 * oldest waiter) exceeds what is left of the request's budget, the request is refused at once with
 * a stackless {@link io.spillway.api.BudgetExceededException}, which the transport answers with a
 * fast {@code REJECTED_BUDGET}. The budget itself is set by the transport when it dispatches the
 * request ({@code SpillwayServer.Builder.queueingBudgetNanos}: target − p99 service − p99 network,
 * §3.2, the simulator's {@link Scenario#asqmBudgetNanos()}), already shrunk by the time the request
 * waited between admission and its handler; the lock charges its own wait. Otherwise the request
 * takes the plain {@link BudgetedLock#lock()}, as an application without ASQM would.
 *
 * <p>The spin yields the core between clock checks ({@link SharedCoreSpin}): the harness gives the
 * server one core, and Protego's experiment needs the mutexes, not the CPU, to be the bottleneck.
 *
 * <p>Thread-safe; {@link #handle} runs on the server's dispatcher threads.
 */
final class MutexPathService implements RequestHandler {

  /** Bytes of a request: service nanoseconds, then the path draw. */
  static final int REQUEST_BYTES = 16;

  private final BudgetedLock[] mutexes;
  private final double[] cumulative;
  private final boolean budgeted;

  /**
   * @param paths each path's probability (they sum to 1)
   * @param budgeted whether requests acquire within their budget (ASQM) or plainly
   * @param ticker the clock the server measures budgets with; the mutexes stamp waiters with it
   * @param rule how the mutexes estimate a newcomer's wait ({@code asqm.wait_estimate})
   */
  MutexPathService(double[] paths, boolean budgeted, Ticker ticker, LockWaitRule rule) {
    if (paths.length == 0) {
      throw new IllegalArgumentException("the mutex-path service needs at least one path");
    }
    this.mutexes = new BudgetedLock[paths.length];
    this.cumulative = new double[paths.length];
    double sum = 0;
    for (int i = 0; i < paths.length; i++) {
      sum += paths[i];
      cumulative[i] = sum;
      mutexes[i] = new BudgetedLock(ticker, false, rule);
    }
    this.budgeted = budgeted;
  }

  /** The service of {@code scenario}'s {@code paths}. */
  static MutexPathService forScenario(Scenario scenario, boolean budgeted, Ticker ticker) {
    return new MutexPathService(scenario.paths(), budgeted, ticker, scenario.lockWaitRule());
  }

  /** A request's payload. */
  static byte[] request(long serviceNanos, long pathDraw) {
    return ByteBuffer.allocate(REQUEST_BYTES).putLong(serviceNanos).putLong(pathDraw).array();
  }

  /** The path a draw picks: the first whose cumulative probability exceeds the draw's fraction. */
  int path(long draw) {
    double u = (draw >>> 11) * 0x1.0p-53; // the top 53 bits as a fraction in [0, 1)
    int path = 0;
    while (path < cumulative.length - 1 && u >= cumulative[path]) {
      path++;
    }
    return path;
  }

  /** Path {@code i}'s mutex (tests hold it to make a queue). */
  BudgetedLock mutex(int i) {
    return mutexes[i];
  }

  boolean isBudgeted() {
    return budgeted;
  }

  @Override
  public ByteBuf handle(ByteBuf request, ByteBufAllocator alloc) {
    int at = request.readerIndex();
    long nanos = request.readableBytes() >= 8 ? request.getLong(at) : 0;
    long draw = request.readableBytes() >= REQUEST_BYTES ? request.getLong(at + 8) : mix(nanos);
    BudgetedLock mutex = mutexes[path(draw)];
    if (budgeted) {
      try (var _ = mutex.acquireWithinBudget()) {
        SharedCoreSpin.spin(nanos);
      }
    } else {
      mutex.lock();
      try {
        SharedCoreSpin.spin(nanos);
      } finally {
        mutex.unlock();
      }
    }
    return Unpooled.EMPTY_BUFFER;
  }

  /** SplittableRandom's finaliser (Stafford variant 13): a well-spread draw from any long. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  @Override
  public String toString() {
    return "MutexPathService[cumulative=" + Arrays.toString(cumulative) + ", "
        + (budgeted ? "acquireWithinBudget" : "lock") + ", spin "
        + (SharedCoreSpin.isAvailable() ? "yielding the core" : "busy (" + SharedCoreSpin.unavailabilityCause() + ")")
        + "]";
  }
}
