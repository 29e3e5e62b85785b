/** µTune's adaptation of threading models to load: models, profiles, the load detector, the policy. */
module io.spillway.threading {
  requires transitive io.spillway.api;

  exports io.spillway.threading;
}
