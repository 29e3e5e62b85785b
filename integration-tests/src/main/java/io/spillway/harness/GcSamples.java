package io.spillway.harness;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.Set;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.management.NotificationEmitter;
import java.util.stream.Collectors;
import javax.management.openmbean.CompositeData;

/**
 * The heap in use after every garbage collection of this JVM, from the collectors' notifications
 * ({@link GarbageCollectionNotificationInfo}): the sum over the heap's memory pools of their use
 * after the collection, with the JVM's uptime at its end. A soak's memory is judged on these, not on the
 * heap in use at random moments, which mostly measures how far the young generation has filled.
 * Thread-safe.
 */
final class GcSamples {

  private static final ConcurrentLinkedQueue<long[]> SAMPLES = new ConcurrentLinkedQueue<>();
  private static volatile boolean started;
  private static final Set<String> HEAP_POOLS = ManagementFactory.getMemoryPoolMXBeans().stream()
      .filter(p -> p.getType() == MemoryType.HEAP).map(MemoryPoolMXBean::getName)
      .collect(Collectors.toUnmodifiableSet());

  private GcSamples() { }

  /** Subscribes to every collector's notifications (once). */
  static synchronized void start() {
    if (started) {
      return;
    }
    started = true;
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof NotificationEmitter emitter) {
        emitter.addNotificationListener((notification, handback) -> {
          if (!notification.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
            return;
          }
          GarbageCollectionNotificationInfo info =
              GarbageCollectionNotificationInfo.from((CompositeData) notification.getUserData());
          long used = 0;
          for (var pool : info.getGcInfo().getMemoryUsageAfterGc().entrySet()) {
            if (HEAP_POOLS.contains(pool.getKey())) {
              used += pool.getValue().getUsed();
            }
          }
          SAMPLES.add(new long[] {info.getGcInfo().getEndTime(), used});
        }, null, null);
      }
    }
  }

  /** The samples since the last call, {@code UPTIME_MS:BYTES,...} (empty if none), and forgets them. */
  static String drain() {
    StringJoiner out = new StringJoiner(",");
    for (long[] s; (s = SAMPLES.poll()) != null; ) {
      out.add(s[0] + ":" + s[1]);
    }
    return out.toString();
  }
}
