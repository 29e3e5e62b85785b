/**
 * Protego's ASQM: {@code BudgetedLock}, {@code BudgetedCondition}, the carrier-delay dispatcher
 * and the contended-lock finder. The dispatcher's virtual-thread route needs
 * {@code --add-opens java.base/java.lang=io.spillway.asqm} on the module path (ALL-UNNAMED on the
 * class path); without it, it falls back to platform threads and says why.
 */
module io.spillway.asqm {
  requires transitive io.spillway.api;
  requires jdk.jfr;

  exports io.spillway.asqm;
}
