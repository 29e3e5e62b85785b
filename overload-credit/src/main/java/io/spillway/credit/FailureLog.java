package io.spillway.credit;

/**
 * Logs the failures of one control loop or update path: the first at WARNING, later ones at DEBUG,
 * so that a metrics callback that always throws is reported once and does not flood the log, as
 * {@code Scheduler#every} does for a periodic task.
 *
 * <p>Not thread-safe: each instance is used by one thread at a time (a loop's sequential runs, or
 * under its owner's update lock).
 */
final class FailureLog {

  private final System.Logger logger;
  private final String message;
  private boolean failedBefore;

  FailureLog(Class<?> owner, String message) {
    this.logger = System.getLogger(owner.getName());
    this.message = message;
  }

  void log(RuntimeException e) {
    logger.log(failedBefore ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING, message, e);
    failedBefore = true;
  }
}
