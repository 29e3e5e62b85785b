package io.spillway.peers;

import com.alibaba.csp.sentinel.AsyncEntry;
import com.alibaba.csp.sentinel.EntryType;
import com.alibaba.csp.sentinel.SphU;
import com.alibaba.csp.sentinel.Tracer;
import com.alibaba.csp.sentinel.slots.block.BlockException;
import com.alibaba.csp.sentinel.slots.system.SystemBlockException;
import com.alibaba.csp.sentinel.slots.system.SystemRule;
import com.alibaba.csp.sentinel.slots.system.SystemRuleManager;
import io.spillway.api.AbstractServerPermit;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * Sentinel's system rule enforced at a server's admission point: each request is one asynchronous
 * inbound entry ({@code SphU.asyncEntry(RESOURCE, EntryType.IN)}) of the resource {@value
 * #RESOURCE}. An entry Sentinel blocks becomes a {@link Status#REJECTED_LIMIT} permit (Sentinel has
 * already exited the blocked entry itself, in {@code CtSph}); an admitted one holds its entry until
 * the permit completes, and completing exits it, exactly once, whatever the outcome: the CAS in
 * {@link AbstractServerPermit} runs {@code onComplete} once, and nothing else exits the entry.
 *
 * <p>Asynchronous entries because the transport admits on an event loop and may complete on a
 * worker thread: a plain {@code SphU.entry} is bound to its thread's context and must be exited on
 * it, in reverse order of entering; an {@code AsyncEntry} is detached from the thread's context
 * once admitted and may be exited from any thread.
 *
 * <p>Completion maps to what Sentinel's own adapters report: {@link Outcome#FAILED} is traced as an
 * error ({@code Tracer.traceEntry}, counted in Sentinel's exception statistics) before the exit;
 * every other outcome is a plain exit. Sentinel counts every exit as a completion with its response
 * time, read from its own millisecond clock: the times Spillway hands the gate are not used.
 *
 * <p>Sentinel's rules and statistics are static ({@code SystemRuleManager}, {@code
 * Constants.ENTRY_NODE}), so one gate at a time owns them: the constructor loads the rule and
 * refuses to run beside another open gate; {@link #close()} clears the system rules and frees the
 * slot. Statistics cannot be cleared: a later gate in the same JVM starts with the last second's.
 *
 * <p>Thread-safe: Sentinel's entry and exit are thread-safe; the gate's own counters are adders.
 * There is no periodic work of the gate's own (Sentinel's threads sample the load and CPU usage).
 */
final class SentinelServerGate implements ServerGate {

  /** The Sentinel resource every request enters. */
  static final String RESOURCE = "spillway-inbound";

  private static final System.Logger LOG = System.getLogger(SentinelServerGate.class.getName());
  private static final AtomicReference<SentinelServerGate> OPEN = new AtomicReference<>();

  private final SentinelSystemConfig config;
  private final OverloadMetrics metrics;
  private final LongAdder admitted = new LongAdder();
  private final Map<String, LongAdder> refusals = new ConcurrentHashMap<>();

  SentinelServerGate(SentinelSystemConfig config, ServerEnvironment environment) {
    this.config = config;
    this.metrics = environment.metrics();
    SentinelServerGate other = OPEN.compareAndExchange(null, this);
    if (other != null) {
      throw new IllegalStateException("Sentinel keeps its rules and statistics in static state"
          + " (SystemRuleManager, Constants.ENTRY_NODE), so a JVM runs one Sentinel gate at a time,"
          + " and one is open (" + other.config + "): close it first, or run the other server in"
          + " a process of its own");
    }
    try {
      SystemRule rule = new SystemRule();
      rule.setHighestSystemLoad(config.highestSystemLoad());
      rule.setHighestCpuUsage(config.highestCpuUsage());
      SystemRuleManager.loadRules(List.of(rule));
    } catch (RuntimeException | LinkageError e) {
      OPEN.set(null);
      throw e;
    }
    LOG.log(System.Logger.Level.INFO, () -> "sentinel gate open: system rule " + config + " on resource "
        + RESOURCE + ", " + Runtime.getRuntime().availableProcessors() + " processor(s) available");
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    AsyncEntry entry;
    try {
      entry = SphU.asyncEntry(RESOURCE, EntryType.IN);
    } catch (BlockException e) {
      refusals.computeIfAbsent(reason(e), r -> new LongAdder()).increment();
      metrics.onAdmission(Status.REJECTED_LIMIT);
      return new RefusedPermit(metrics);
    }
    admitted.increment();
    metrics.onAdmission(Status.OK);
    return new EntryPermit(entry);
  }

  /** {@code load}, {@code cpu}, ... for the system rule's triggers, else the exception's type. */
  private static String reason(BlockException e) {
    return e instanceof SystemBlockException s ? s.getLimitType() : e.getClass().getSimpleName();
  }

  @Override
  public void deregister(long sessionId, long nowNanos) { }

  /** Clears Sentinel's system rules and lets another gate open. Idempotent. */
  @Override
  public void close() {
    if (OPEN.compareAndSet(this, null)) {
      SystemRuleManager.loadRules(List.of());
      LOG.log(System.Logger.Level.INFO, () -> "sentinel gate closed (" + config + "): admitted "
          + admitted() + ", refused " + refusals() + "; Sentinel's last readings: load1 "
          + SystemRuleManager.getCurrentSystemAvgLoad() + ", CPU usage " + SystemRuleManager.getCurrentCpuUsage());
    }
  }

  /** Requests admitted so far. */
  long admitted() {
    return admitted.sum();
  }

  /** Requests refused so far, by Sentinel's reason ({@code load}, {@code cpu}, ...). */
  Map<String, Long> refusals() {
    Map<String, Long> counts = new TreeMap<>();
    refusals.forEach((reason, n) -> counts.put(reason, n.sum()));
    return counts;
  }

  /** An admitted request: holds its Sentinel entry until it completes. */
  private final class EntryPermit extends AbstractServerPermit {
    private final AsyncEntry entry;

    EntryPermit(AsyncEntry entry) {
      super(Status.OK);
      this.entry = entry;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      try {
        if (outcome == Outcome.FAILED) {
          Tracer.traceEntry(RequestFailed.INSTANCE, entry);
        }
      } finally {
        entry.exit();
        metrics.onCompletion(outcome);
      }
    }
  }

  /** A request Sentinel refused: it holds no entry (Sentinel exited the blocked one). */
  private static final class RefusedPermit extends AbstractServerPermit {
    private final OverloadMetrics metrics;

    RefusedPermit(OverloadMetrics metrics) {
      super(Status.REJECTED_LIMIT);
      this.metrics = metrics;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      metrics.onCompletion(outcome);
    }
  }

  /** What a failed request is traced as: one shared instance, no stack trace. */
  private static final class RequestFailed extends Exception {
    static final RequestFailed INSTANCE = new RequestFailed();

    private RequestFailed() {
      super("the request's handler failed", null, false, false);
    }
  }
}
