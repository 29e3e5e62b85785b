package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a user who did not add {@code --add-opens java.base/java.lang=ALL-UNNAMED} gets: the
 * platform fallback and a reason that names the flag. Surefire's {@code without-add-opens}
 * execution runs this class in a JVM without the flag; elsewhere it skips.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CarrierDispatcherWithoutAddOpensTest {

  @Test
  void fallsBackAndNamesTheMissingFlag() {
    assumeTrue(Boolean.getBoolean("spillway.asqm.withoutAddOpens"),
        "runs in surefire's without-add-opens execution");
    assertFalse(VirtualCarrierDispatcherTest.javaLangOpen(), "this JVM must not open java.lang");

    AtomicLong now = new AtomicLong();
    try (CarrierDispatcher dispatcher = CarrierDispatcher.create(2, now::get)) {
      assertFalse(dispatcher.usesVirtualThreads());
      String reason = dispatcher.fallbackReason().orElseThrow();
      assertTrue(reason.contains("--add-opens java.base/java.lang=ALL-UNNAMED"), reason);

      CountDownLatch ran = new CountDownLatch(1);
      dispatcher.execute(ran::countDown);
      Await.await(ran);
    }
  }

  /**
   * The virtual route alone is refused here, and leaves no carrier running: a caller falls back to
   * what it chooses (SpillwayServer: the JDK's own scheduler), not to the platform pool.
   */
  @Test
  void theVirtualRouteAloneIsEmptyAndLeavesNoCarrier() {
    assumeTrue(Boolean.getBoolean("spillway.asqm.withoutAddOpens"),
        "runs in surefire's without-add-opens execution");
    long carriersBefore = carrierThreads();
    assertTrue(CarrierDispatcher.onVirtualThreads(2, System::nanoTime).isEmpty());
    assertEquals(carriersBefore, carrierThreads(), "a carrier thread outlived the refused route");
  }

  private static long carrierThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("spillway-carrier")).count();
  }
}
