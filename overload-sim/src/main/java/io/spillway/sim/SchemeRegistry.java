package io.spillway.sim;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.baselines.CoDel;
import io.spillway.baselines.CoDelConfig;
import io.spillway.baselines.Dagor;
import io.spillway.baselines.DagorConfig;
import io.spillway.baselines.Seda;
import io.spillway.baselines.SedaConfig;
import io.spillway.baselines.Window;
import io.spillway.baselines.WindowConfig;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.Protego;
import io.spillway.credit.ProtegoConfig;
import io.spillway.credit.Spillway;
import io.spillway.peers.AimdConfig;
import io.spillway.peers.Gradient2Config;
import io.spillway.peers.NetflixConcurrencyLimit;
import io.spillway.peers.VegasConfig;
import io.spillway.price.PriceAttachment;
import io.spillway.price.Rajomon;
import io.spillway.price.RajomonConfig;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The schemes an experiment can name, each built from the scenario's parameters. Adding a scheme
 * is one entry here; the simulator and, later, the harness drive them all through the same
 * {@link OverloadScheme} interface.
 */
public final class SchemeRegistry {

  private record Entry(String name, Function<Scenario, OverloadScheme> factory) { }

  private static final List<Entry> ENTRIES = List.of(
      new Entry("none", s -> NoControl.INSTANCE),
      // The scheme a user who names none gets: Spillway.forSlo with the SLO alone.
      new Entry("spillway", s -> s.isSet("spillway.budget_us")
          ? Spillway.forSloNanos(s.sloNanos())
              .withRequestBudgetNanos(s.nanos("spillway.budget_us", 1_000))
          : Spillway.forSloNanos(s.sloNanos())),
      new Entry("breakwater", s -> Breakwater.of(breakwaterConfig(s))),
      new Entry("breakwater-credit", s -> Breakwater.creditsOnly(breakwaterConfig(s))),
      new Entry("breakwater-credit-spec", s -> Breakwater.creditsWithSpeculation(breakwaterConfig(s))),
      new Entry("protego", s -> Protego.of(protegoConfig(s))),
      // Protego's ablations (protego-nsdi23 Fig. 11): admission control alone, ASQM alone.
      new Entry("protego-ac", s -> Protego.of(protegoConfig(s))),
      new Entry("protego-asqm", s -> NoControl.INSTANCE),
      new Entry("codel", s -> CoDel.of(codelConfig(s))),
      new Entry("window", s -> Window.of(windowConfig(s))),
      new Entry("seda", s -> Seda.of(sedaConfig(s))),
      new Entry("dagor", s -> Dagor.of(dagorConfig(s))),
      new Entry("netflix-gradient2", s -> NetflixConcurrencyLimit.of(gradient2Config(s))),
      new Entry("netflix-vegas", s -> NetflixConcurrencyLimit.of(vegasConfig(s))),
      new Entry("netflix-aimd", s -> NetflixConcurrencyLimit.of(aimdConfig(s))),
      new Entry("rajomon", s -> Rajomon.of(rajomonConfig(s))));

  private SchemeRegistry() { }

  /**
   * Schemes under which the server applies ASQM (budgeted run queue and mutexes); the simulator
   * and the real-socket harness both ask here.
   */
  public static boolean usesAsqm(String name) {
    return name.equals("protego") || name.equals("protego-asqm");
  }

  /** Every scheme name, in the order reports list them. */
  public static List<String> names() {
    return ENTRIES.stream().map(Entry::name).toList();
  }

  /**
   * The scheme called {@code name}, configured from {@code scenario}.
   *
   * @throws IllegalArgumentException naming the known schemes if {@code name} is not one
   */
  public static OverloadScheme create(String name, Scenario scenario) {
    for (Entry entry : ENTRIES) {
      if (entry.name().equals(name)) {
        return entry.factory().apply(scenario);
      }
    }
    if (name.equals(REAL_TIME_ONLY)) {
      throw new IllegalArgumentException("scheme '" + name + "' runs on real sockets only (./spillway"
          + " harness): Sentinel's statistics follow its own wall clock, not the simulator's virtual"
          + " time; known schemes here: " + String.join(", ", names()));
    }
    throw new IllegalArgumentException("unknown scheme '" + name + "'; known schemes: "
        + String.join(", ", names()));
  }

  /**
   * The scheme the real-socket harness adds to these ({@code io.spillway.harness.SocketSchemes}):
   * Alibaba Sentinel, whose statistics read a wall clock, so it cannot run here.
   */
  public static final String REAL_TIME_ONLY = "sentinel";

  /** Breakwater's paper defaults for the scenario's SLO and RTT, with any breakwater.* keys applied. */
  static BreakwaterConfig breakwaterConfig(Scenario s) {
    BreakwaterConfig.Builder b = BreakwaterConfig.forSlo(s.sloNanos(), s.rttNanos()).toBuilder();
    if (s.isSet("breakwater.alpha")) {
      b.alpha(s.doubleValue("breakwater.alpha"));
    }
    if (s.isSet("breakwater.beta")) {
      b.beta(s.doubleValue("breakwater.beta"));
    }
    if (s.isSet("breakwater.target_us")) {
      b.targetDelayNanos(s.nanos("breakwater.target_us", 1_000));
    }
    if (s.isSet("breakwater.drop_us")) {
      b.dropThresholdNanos(s.nanos("breakwater.drop_us", 1_000));
    }
    if (s.isSet("breakwater.period_us")) {
      b.controlPeriodNanos(s.nanos("breakwater.period_us", 1_000));
    }
    if (s.isSet("breakwater.client_timeout_us")) {
      b.clientQueueTimeoutNanos(s.nanos("breakwater.client_timeout_us", 1_000));
    }
    if (s.isSet("breakwater.per_session_cap")) {
      b.perSessionCap(s.intValue("breakwater.per_session_cap"));
    }
    if (s.isSet("breakwater.budget_us")) {
      b.requestBudgetNanos(s.nanos("breakwater.budget_us", 1_000));
    }
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("breakwater parameters: " + e.getMessage(), e);
    }
  }

  /** CoDel's tuned defaults for the scenario's SLO, with any codel.* keys applied. */
  static CoDelConfig codelConfig(Scenario s) {
    return configure("codel", () -> {
      CoDelConfig c = CoDelConfig.forSlo(s.sloNanos());
      if (s.isSet("codel.target_us")) {
        c = c.withTarget(s.nanos("codel.target_us", 1_000));
      }
      if (s.isSet("codel.interval_us")) {
        c = c.withInterval(s.nanos("codel.interval_us", 1_000));
      }
      return c;
    });
  }

  /** The window scheme's defaults for the scenario's SLO, with any window.* keys applied. */
  static WindowConfig windowConfig(Scenario s) {
    return configure("window", () -> {
      WindowConfig c = WindowConfig.forSlo(s.sloNanos());
      if (s.isSet("window.ai")) {
        c = c.withAdditiveIncrease(s.doubleValue("window.ai"));
      }
      if (s.isSet("window.md")) {
        c = c.withMultiplicativeDecrease(s.doubleValue("window.md"));
      }
      if (s.isSet("window.target_us")) {
        c = c.withLatencyThreshold(s.nanos("window.target_us", 1_000));
      }
      if (s.isSet("window.max")) {
        c = c.withMaxWindow(s.intValue("window.max"));
      }
      if (s.isSet("window.client_timeout_us")) {
        c = c.withClientQueueTimeout(s.nanos("window.client_timeout_us", 1_000));
      }
      return c;
    });
  }

  /**
   * SEDA as breakwater-osdi20 §5.1 tuned it for the scenario's SLO and client count (adj_i scaled
   * with the clients), with any seda.* keys applied; seda.adj_i is taken as given, unscaled.
   */
  static SedaConfig sedaConfig(Scenario s) {
    return configure("seda", () -> {
      SedaConfig c = SedaConfig.forSlo(s.sloNanos(), s.clients());
      if (s.isSet("seda.adj_i")) {
        c = c.withAdjI(s.doubleValue("seda.adj_i"));
      }
      if (s.isSet("seda.adj_d")) {
        c = c.withAdjD(s.doubleValue("seda.adj_d"));
      }
      if (s.isSet("seda.target_us")) {
        c = c.withTarget(s.nanos("seda.target_us", 1_000));
      }
      if (s.isSet("seda.timeout_us")) {
        c = c.withTimeout(s.nanos("seda.timeout_us", 1_000));
      }
      if (s.isSet("seda.init_rps")) {
        c = c.withInitialRate(s.doubleValue("seda.init_rps"));
      }
      if (s.isSet("seda.burst")) {
        c = c.withBurst(s.doubleValue("seda.burst"));
      }
      if (s.isSet("seda.client_timeout_us")) {
        c = c.withClientQueueTimeout(s.nanos("seda.client_timeout_us", 1_000));
      }
      return c;
    });
  }

  /** DAGOR as breakwater-osdi20 §5.1 tuned it for the scenario's SLO, with any dagor.* keys applied. */
  static DagorConfig dagorConfig(Scenario s) {
    return configure("dagor", () -> {
      DagorConfig c = DagorConfig.forSlo(s.sloNanos());
      if (s.isSet("dagor.q_us")) {
        c = c.withQueueingThreshold(s.nanos("dagor.q_us", 1_000));
      }
      if (s.isSet("dagor.alpha")) {
        c = c.withAlpha(s.doubleValue("dagor.alpha"));
      }
      if (s.isSet("dagor.beta")) {
        c = c.withBeta(s.doubleValue("dagor.beta"));
      }
      if (s.isSet("dagor.period_us")) {
        c = c.withPeriod(s.nanos("dagor.period_us", 1_000));
      }
      if (s.isSet("dagor.window_reqs")) {
        c = c.withWindowRequests(s.intValue("dagor.window_reqs"));
      }
      return c;
    });
  }

  /**
   * Protego (protego-nsdi23 §3.1) for the scenario's SLO and RTT, with the pool rule chosen by
   * {@code protego.rule}: the authors' implementation (default) or Algorithm 1 as printed.
   */
  static ProtegoConfig protegoConfig(Scenario s) {
    return configure("protego", () -> {
      ProtegoConfig c = ProtegoConfig.forSlo(s.sloNanos(), s.rttNanos());
      if (s.isSet("protego.rule")) {
        String rule = s.get("protego.rule").strip().toUpperCase(java.util.Locale.ROOT);
        try {
          c = c.withRule(ProtegoConfig.Rule.valueOf(rule));
        } catch (IllegalArgumentException e) {
          throw Scenario.invalid("protego.rule", "expected authors or paper, got '"
              + s.get("protego.rule") + "'");
        }
      }
      if (s.isSet("protego.client_timeout_us")) {
        c = c.withClientQueueTimeout(s.nanos("protego.client_timeout_us", 1_000));
      }
      return c;
    });
  }

  /**
   * Rajomon (rajomon-nsdi25 §3.3–3.4) scaled to the scenario's SLO and RTT
   * ({@link RajomonConfig#forSlo}), with any rajomon.* keys applied. Unset keys follow forSlo's
   * rules from the values that are set: the interval is max(RTT, threshold / 2) of the threshold
   * in force, so a scenario that only lowers the threshold also updates prices as often as that
   * threshold calls for, not at the SLO-derived interval (SLO / 8).
   */
  static RajomonConfig rajomonConfig(Scenario s) {
    return configure("rajomon", () -> {
      RajomonConfig base = RajomonConfig.forSlo(s.sloNanos(), s.rttNanos());
      RajomonConfig.Builder b = base.toBuilder().seed(s.seed());
      long threshold = base.delayThresholdNanos();
      if (s.isSet("rajomon.threshold_us")) {
        threshold = s.nanos("rajomon.threshold_us", 1_000);
        b.delayThresholdNanos(threshold);
      }
      long interval = s.isSet("rajomon.interval_us") ? s.nanos("rajomon.interval_us", 1_000)
          : RajomonConfig.updateIntervalFor(threshold, s.rttNanos());
      b.priceUpdateIntervalNanos(interval);
      long increase = s.isSet("rajomon.increase") ? s.longValue("rajomon.increase")
          : base.priceIncreaseTokens();
      b.priceIncrease(increase, threshold);
      long refill = s.isSet("rajomon.refill_tokens") ? s.longValue("rajomon.refill_tokens")
          : base.tokensPerRefill();
      b.refill(base.tokenRefill(), refill, interval);
      if (s.isSet("rajomon.trend")) {
        b.priceTrendWeight(s.longValue("rajomon.trend"));
      }
      if (s.isSet("rajomon.wait_us")) {
        b.clientWaitTimeoutNanos(s.nanos("rajomon.wait_us", 1_000));
      }
      if (s.isSet("rajomon.attach_every")) {
        b.priceAttachment(PriceAttachment.everyNth(s.intValue("rajomon.attach_every")));
      }
      if (s.isSet("rajomon.list_lowers_after")) {
        b.listLowersAfterIntervals(s.longValue("rajomon.list_lowers_after"));
      }
      if (s.isSet("rajomon.all_prices")) {
        b.allInterfacePrices(s.booleanValue("rajomon.all_prices"));
      }
      return b.build();
    });
  }

  /** Netflix Gradient2 with the library's defaults, with any netflix.* and netflix.gradient2.* keys applied. */
  static Gradient2Config gradient2Config(Scenario s) {
    return configure("netflix-gradient2", () -> {
      Gradient2Config c = Gradient2Config.defaults();
      c = c.withLimits(intOr(s, "netflix.initial_limit", c.initialLimit()),
          intOr(s, "netflix.min_limit", c.minLimit()), intOr(s, "netflix.max_limit", c.maxConcurrency()));
      if (s.isSet("netflix.gradient2.queue_size")) {
        c = c.withQueueSize(s.intValue("netflix.gradient2.queue_size"));
      }
      if (s.isSet("netflix.gradient2.smoothing")) {
        c = c.withSmoothing(s.doubleValue("netflix.gradient2.smoothing"));
      }
      if (s.isSet("netflix.gradient2.rtt_tolerance")) {
        c = c.withRttTolerance(s.doubleValue("netflix.gradient2.rtt_tolerance"));
      }
      return c;
    });
  }

  /** Netflix Vegas with the library's defaults (probing off), with any netflix.* and netflix.vegas.* keys applied. */
  static VegasConfig vegasConfig(Scenario s) {
    return configure("netflix-vegas", () -> {
      VegasConfig c = VegasConfig.defaults();
      c = c.withLimits(intOr(s, "netflix.initial_limit", c.initialLimit()),
          intOr(s, "netflix.max_limit", c.maxConcurrency()));
      if (s.isSet("netflix.vegas.smoothing")) {
        c = c.withSmoothing(s.doubleValue("netflix.vegas.smoothing"));
      }
      return c;
    });
  }

  /** Netflix AIMD with the library's defaults, with any netflix.* and netflix.aimd.* keys applied. */
  static AimdConfig aimdConfig(Scenario s) {
    return configure("netflix-aimd", () -> {
      AimdConfig c = AimdConfig.defaults();
      c = c.withLimits(intOr(s, "netflix.initial_limit", c.initialLimit()),
          intOr(s, "netflix.min_limit", c.minLimit()), intOr(s, "netflix.max_limit", c.maxLimit()));
      if (s.isSet("netflix.aimd.backoff")) {
        c = c.withBackoffRatio(s.doubleValue("netflix.aimd.backoff"));
      }
      if (s.isSet("netflix.aimd.timeout_us")) {
        c = c.withTimeout(s.nanos("netflix.aimd.timeout_us", 1_000));
      }
      return c;
    });
  }

  private static int intOr(Scenario s, String key, int fallback) {
    return s.isSet(key) ? s.intValue(key) : fallback;
  }

  private static <T> T configure(String scheme, Supplier<T> build) {
    try {
      return build.get();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(scheme + " parameters: " + e.getMessage(), e);
    }
  }
}
