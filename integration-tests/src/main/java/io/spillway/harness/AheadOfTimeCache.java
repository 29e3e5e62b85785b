package io.spillway.harness;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The ahead-of-time cache a harness's server JVM starts from (JDK 25, JEP 483 and 515: classes
 * loaded and linked, and method profiles, recorded by a training run), named by the system
 * property {@value #CACHE}. The launcher ({@code ./spillway harness} and {@code ./spillway graph})
 * trains one per build with a short overload run, during which {@value #TRAIN} = true makes the
 * server write it, and starts later servers, and the load generator, from theirs.
 *
 * <p>Why: each harness process has one pinned core, and on this kernel (HZ = 250, no kernel
 * preemption) a C2 compiler thread that wakes beside a busy event loop holds the core for up to a
 * 4 ms tick. Without profiles, overload paths first become hot inside the measured levels and are
 * compiled (and deoptimized and recompiled) there; perf's context-switch records had C2 taking 104
 * ms of the server's core in 6 s at 2x. With recorded profiles they compile during warm-up.
 *
 * <p>Without the property, or before the cache exists, no option is added; a cache that does not
 * match the class path is ignored by the JVM with a warning.
 */
public final class AheadOfTimeCache {

  /** System property: the server cache's path. */
  public static final String CACHE = "spillway.aot.server";
  /** System property: {@code true} while training (the server writes the cache at exit). */
  public static final String TRAIN = "spillway.aot.train";

  private AheadOfTimeCache() { }

  /**
   * How long to let a stopping server exit before killing it: 10 s, or 5 minutes while training,
   * when it assembles its cache on the way out (a killed server would leave the assembling JVM to
   * finish on the pinned core during the next measurement).
   */
  public static long exitWaitSeconds() {
    return Boolean.getBoolean(TRAIN) ? 300 : 10;
  }

  /** The JVM options a server process starts with. */
  public static List<String> serverOptions() {
    String cache = System.getProperty(CACHE);
    if (cache == null || cache.isBlank()) {
      return List.of();
    }
    if (Boolean.getBoolean(TRAIN)) {
      return List.of("-XX:AOTCacheOutput=" + cache);
    }
    return Files.isRegularFile(Path.of(cache)) ? List.of("-XX:AOTCache=" + cache) : List.of();
  }
}
