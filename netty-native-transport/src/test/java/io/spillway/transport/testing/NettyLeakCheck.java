package io.spillway.transport.testing;

import io.netty.util.ResourceLeakDetector;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class after which Netty's leak detector has reported a buffer dropped unreleased.
 * Registered for every test class of a module by JUnit's extension auto-detection (this class is
 * listed in {@code META-INF/services/org.junit.jupiter.api.extension.Extension}, and a module's
 * surefire configuration sets {@code junit.jupiter.extensions.autodetection.enabled=true} with
 * {@code -Dio.netty.leakDetection.level=paranoid}), so a module's socket tests double as its leak
 * run. Netty only logs what its detector finds; a test run whose logging goes nowhere would pass
 * over a leak.
 *
 * <p>The detector is installed when JUnit loads its extensions, before any test makes a buffer.
 * Before the first class it checks that the level is PARANOID and that a buffer dropped on purpose
 * is seen, so "nothing reported" means something. A leak is reported once the collector has taken
 * the buffer, which may be after the class that leaked it has ended: the report's records name
 * where the buffer was last touched.
 */
public final class NettyLeakCheck implements BeforeAllCallback, AfterAllCallback {

  static {
    NettyLeaks.install();
  }

  private static volatile boolean verified;

  @Override
  public void beforeAll(ExtensionContext context) {
    if (verified) {
      return;
    }
    synchronized (NettyLeakCheck.class) {
      if (!verified) {
        if (NettyLeaks.level() != ResourceLeakDetector.Level.PARANOID) {
          throw new IllegalStateException("the leak check needs -Dio.netty.leakDetection.level=paranoid, not "
              + NettyLeaks.level());
        }
        if (!NettyLeaks.detectsADeliberateLeak()) {
          throw new IllegalStateException("Netty's leak detector did not see a buffer dropped on purpose");
        }
        verified = true;
      }
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    NettyLeaks.collect();
    List<String> reports = NettyLeaks.reports();
    if (!reports.isEmpty()) {
      NettyLeaks.clear(); // reported once, not again after every later class
      throw new AssertionError("Netty's leak detector reported " + reports.size()
          + " buffer(s) dropped unreleased by the end of " + context.getDisplayName() + ":\n"
          + String.join("\n", reports));
    }
  }
}
