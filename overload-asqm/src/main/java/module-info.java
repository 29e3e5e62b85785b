/**
 * Protego's ASQM: {@code BudgetedLock}, {@code BudgetedCondition}, {@code BudgetedSemaphore} and
 * {@code BudgetedDataSource}, the carrier-delay dispatcher and the contended-lock finder. The
 * dispatcher's virtual-thread route needs {@code --add-opens java.base/java.lang=io.spillway.asqm}
 * on the module path (ALL-UNNAMED on the class path); without it, it falls back to platform
 * threads and says why. The finder samples thread dumps through {@code jdk.management}; sampling
 * another process by its id also needs {@code jdk.attach} and {@code java.management.rmi}
 * (resolved on the class path; on the module path, {@code --add-modules
 * jdk.attach,java.management.rmi}).
 */
module io.spillway.asqm {
  requires transitive io.spillway.api;
  requires transitive java.sql; // BudgetedDataSource's API is javax.sql.DataSource
  requires jdk.jfr;
  requires jdk.management;
  requires static jdk.attach;

  exports io.spillway.asqm;
}
