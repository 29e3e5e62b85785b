package io.spillway.asqm;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InaccessibleObjectException;
import java.lang.reflect.InvocationTargetException;
import java.util.concurrent.Executor;

/**
 * The one route JDK 25 offers to a virtual-thread builder with a custom scheduler: the
 * package-private constructor {@code java.lang.ThreadBuilders$VirtualThreadBuilder(Executor)},
 * reached by reflection. {@code setAccessible} succeeds only when {@code java.lang} is opened to
 * this code ({@code --add-opens java.base/java.lang=ALL-UNNAMED} on the class path, or {@code
 * =<module>} on the module path).
 *
 * <p>Every failure is turned into a one-line reason for {@link CarrierDispatcher#fallbackReason()};
 * nothing here throws. {@link #isScheduledBy} tells the dispatcher's threads from others, so that
 * {@link CarrierDispatcher#close()} can refuse to wait for its caller. Stateless and thread-safe.
 */
final class VirtualSchedulerRoute {

  static final String BUILDER_CLASS = "java.lang.ThreadBuilders$VirtualThreadBuilder";

  /** Either a builder whose threads run on the scheduler, or why there is none. */
  record Outcome(Thread.Builder.OfVirtual builder, String unavailabilityReason) {}

  private VirtualSchedulerRoute() {}

  static Outcome open(String builderClassName, Executor scheduler) {
    try {
      Class<?> type = Class.forName(builderClassName, false, Object.class.getClassLoader());
      Constructor<?> constructor = type.getDeclaredConstructor(Executor.class);
      constructor.setAccessible(true);
      Object builder = constructor.newInstance(scheduler);
      if (builder instanceof Thread.Builder.OfVirtual ofVirtual) {
        return new Outcome(ofVirtual, null);
      }
      return unavailable(builderClassName + " is not a Thread.Builder.OfVirtual on this JDK");
    } catch (ClassNotFoundException e) {
      return unavailable("this JDK (" + Runtime.version() + ") has no " + builderClassName);
    } catch (NoSuchMethodException e) {
      return unavailable("this JDK (" + Runtime.version() + ") has no " + builderClassName
          + "(Executor) constructor");
    } catch (InaccessibleObjectException e) {
      return unavailable("java.lang is not open to " + describe(VirtualSchedulerRoute.class.getModule())
          + "; start the JVM with --add-opens java.base/java.lang=ALL-UNNAMED");
    } catch (InvocationTargetException e) {
      return unavailable(builderClassName + "(Executor) failed: " + e.getCause());
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return unavailable("cannot reach " + builderClassName + "(Executor): " + e);
    }
  }

  /**
   * Whether {@code thread} is a virtual thread scheduled by {@code scheduler}: one of the
   * dispatcher's own tasks, or a virtual thread such a task started with {@link Thread#ofVirtual()}
   * (which inherits its starter's scheduler). JDK 25 has no public API for a virtual thread's
   * scheduler, so this reads the private field {@code java.lang.VirtualThread.scheduler}, reachable
   * where the builder's constructor is (the same {@code --add-opens}); where that field cannot be
   * read, the answer is false.
   */
  static boolean isScheduledBy(Thread thread, Executor scheduler) {
    if (!thread.isVirtual()) {
      return false;
    }
    Field field = SchedulerField.FIELD;
    if (field == null) {
      return false;
    }
    try {
      return field.get(thread) == scheduler;
    } catch (IllegalAccessException | IllegalArgumentException e) {
      return false;
    }
  }

  /** Resolved on first use, so the platform fallback never touches it. */
  private static final class SchedulerField {
    static final Field FIELD = find();

    private static Field find() {
      try {
        Field field = Class.forName("java.lang.VirtualThread", false, Object.class.getClassLoader())
            .getDeclaredField("scheduler");
        field.setAccessible(true);
        return Executor.class.isAssignableFrom(field.getType()) ? field : null;
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        return null;
      }
    }
  }

  private static Outcome unavailable(String reason) {
    return new Outcome(null, reason);
  }

  private static String describe(Module module) {
    return module.isNamed() ? "module " + module.getName() : "the unnamed module";
  }
}
