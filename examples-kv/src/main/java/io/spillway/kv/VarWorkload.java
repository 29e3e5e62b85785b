package io.spillway.kv;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * Facebook's VAR memcached workload as protego-nsdi23 §5.3 runs it: 82 % SET, 100,000 keys of
 * which 10 % take 90 % of the requests. Key and value sizes follow the distributions Atikoglu et
 * al. (SIGMETRICS'12, §4.2 and Table 5) fitted for ETC, the only pool they published fits for —
 * keys a generalised extreme value (μ 30.8, σ 8.20, ξ 0.0787) and values a generalised Pareto
 * (σ 214.5, ξ 0.348) — the paper's "approximately follow"; values are capped at 16 KiB.
 *
 * <p>Not thread-safe: one instance per generating thread (seeded; the same seed gives the same
 * sequence).
 */
public final class VarWorkload {

  /** The request mix. */
  public enum Op { GET, SET }

  public static final int KEYS = 100_000;
  public static final double SET_SHARE = 0.82;
  private static final double HOT_KEYS = 0.10;
  private static final double HOT_SHARE = 0.90;
  private static final int MAX_VALUE = 16 * 1024;

  private final SplittableRandom random;
  private final byte[][] keys = new byte[KEYS][];
  private final int[] valueLengths = new int[KEYS];
  private final double setShare;

  /** VAR's mix (82 % SET). */
  public VarWorkload(long seed) {
    this(seed, SET_SHARE);
  }

  /** The same keys and sizes with another SET share (USR-like mixes: 0.002). */
  public VarWorkload(long seed, double setShare) {
    if (!(setShare >= 0 && setShare <= 1)) {
      throw new IllegalArgumentException("setShare must be in [0, 1]: " + setShare);
    }
    this.setShare = setShare;
    SplittableRandom sizes = new SplittableRandom(0x5EED_0F_4A5L); // the key space is fixed
    for (int i = 0; i < KEYS; i++) {
      String id = "var:" + i + ":";
      int length = Math.max(id.length(), Math.min(250, keyLength(sizes)));
      keys[i] = (id + "k".repeat(length - id.length())).getBytes(StandardCharsets.US_ASCII);
      valueLengths[i] = valueLength(sizes);
    }
    this.random = new SplittableRandom(seed);
  }

  /** Key-size GEV (ETC): μ + σ ((−ln u)^−ξ − 1) / ξ. */
  static int keyLength(SplittableRandom r) {
    double u = r.nextDouble();
    double x = 30.7984 + 8.20449 * (Math.pow(-Math.log(u), -0.078688) - 1) / 0.078688;
    return (int) Math.max(1, Math.round(x));
  }

  /** Value-size generalised Pareto (ETC): σ ((1 − u)^−ξ − 1) / ξ. */
  static int valueLength(SplittableRandom r) {
    double u = r.nextDouble();
    double x = 214.476 * (Math.pow(1 - u, -0.348238) - 1) / 0.348238;
    return (int) Math.min(MAX_VALUE, Math.max(1, Math.round(x)));
  }

  /** The next request's key index: 90 % from the hottest 10 %. */
  public int nextKey() {
    int hot = (int) (KEYS * HOT_KEYS);
    return random.nextDouble() < HOT_SHARE ? random.nextInt(hot) : hot + random.nextInt(KEYS - hot);
  }

  public Op nextOp() {
    return random.nextDouble() < setShare ? Op.SET : Op.GET;
  }

  public byte[] key(int index) {
    return keys[index];
  }

  public int valueLength(int index) {
    return valueLengths[index];
  }
}
