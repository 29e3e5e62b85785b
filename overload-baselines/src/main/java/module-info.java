/** The papers' baselines behind the SPI: CoDel, window (ORCA), SEDA, DAGOR. */
module io.spillway.baselines {
  requires transitive io.spillway.api;

  exports io.spillway.baselines;
}
