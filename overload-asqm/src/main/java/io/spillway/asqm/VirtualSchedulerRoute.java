package io.spillway.asqm;

import java.lang.reflect.Constructor;
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
 * nothing here throws. Stateless and thread-safe.
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

  private static Outcome unavailable(String reason) {
    return new Outcome(null, reason);
  }

  private static String describe(Module module) {
    return module.isNamed() ? "module " + module.getName() : "the unnamed module";
  }
}
