package io.spillway.transport.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Counts what Netty's leak detector reports, instead of only logging it, so a test can assert that
 * nothing leaked (the socket fault tests directly, every test of a module through
 * {@link NettyLeakCheck}). {@link #install()} must run before Netty creates its first buffer (the byte-buffer
 * detector is made once, when Netty's buffer classes load); the level comes from
 * {@code -Dio.netty.leakDetection.level} (PARANOID tracks every buffer).
 *
 * <p>The detector reports a leak when the garbage collector has taken a buffer that was never
 * released and a later allocation looks at its reference queue; {@link #collect()} makes both
 * happen. Thread-safe.
 */
public final class NettyLeaks {

  private static final List<String> REPORTS = new CopyOnWriteArrayList<>();
  private static volatile boolean installed;

  private NettyLeaks() { }

  public static synchronized void install() {
    if (installed) {
      return;
    }
    installed = true;
    ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
      @Override
      @SuppressWarnings("deprecation")
      public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource,
          int samplingInterval, long maxActive) {
        return new ResourceLeakDetector<>(resource, samplingInterval, maxActive) {
          @Override
          protected void reportTracedLeak(String resourceType, String records) {
            REPORTS.add(resourceType + " leaked:" + records);
          }

          @Override
          protected void reportUntracedLeak(String resourceType) {
            REPORTS.add(resourceType + " leaked (untraced)");
          }
        };
      }
    });
  }

  /** The level in force; the fault tests want PARANOID. */
  public static ResourceLeakDetector.Level level() {
    return ResourceLeakDetector.getLevel();
  }

  /**
   * Lets the detector find what was dropped unreleased: a few rounds of a full collection, each
   * followed by allocations through both allocators (every allocation polls the detector's queue).
   */
  public static void collect() {
    for (int round = 0; round < 4; round++) {
      System.gc();
      for (int i = 0; i < 64; i++) {
        ByteBuf a = PooledByteBufAllocator.DEFAULT.buffer(64);
        a.release();
        ByteBuf b = UnpooledByteBufAllocator.DEFAULT.buffer(64);
        b.release();
      }
    }
  }

  /** Leak reports so far. */
  public static List<String> reports() {
    return List.copyOf(REPORTS);
  }

  public static void clear() {
    REPORTS.clear();
  }

  /**
   * Drops one buffer unreleased and checks that the detector reports it: the fault tests' "no leak"
   * means something only if a leak would have been seen.
   */
  public static boolean detectsADeliberateLeak() {
    clear();
    leakOne();
    for (int attempt = 0; attempt < 20 && REPORTS.isEmpty(); attempt++) {
      collect();
    }
    boolean seen = !REPORTS.isEmpty();
    clear();
    return seen;
  }

  private static void leakOne() {
    PooledByteBufAllocator.DEFAULT.buffer(128).writeLong(42); // never released, on purpose
  }
}
