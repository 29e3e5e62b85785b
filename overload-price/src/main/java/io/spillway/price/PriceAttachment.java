package io.spillway.price;

/**
 * When a server attaches its price to a successful response (rajomon-nsdi25 §3.4 "Lazy Price
 * Propagation": "the controller attaches its price information with a configured probability,
 * e.g., 20%"). A request rejected for its price always carries the price, whatever this says, so a
 * client that is turned away always learns why.
 *
 * <p>The authors' code ({@code rajomon.go}, {@code UnaryInterceptor}) attaches when {@code tokens
 * % priceFreq == 0} (default {@code priceFreq = 5}), on success and on reject alike, and never on
 * success with {@code lazyResponse}; {@link #everyNth(int)} is the deterministic counterpart of the
 * former, {@link #onRejectsOnly()} of the latter.
 *
 * <p>Immutable and thread-safe.
 */
public sealed interface PriceAttachment {

  /** Every response carries the price. */
  static PriceAttachment always() {
    return EveryNth.EVERY;
  }

  /**
   * One response in {@code n} carries the price (counted over the server's responses).
   *
   * @throws IllegalArgumentException if {@code n < 1}
   */
  static PriceAttachment everyNth(int n) {
    return new EveryNth(n);
  }

  /**
   * Each response carries the price with probability {@code p}, drawn from the server gate's
   * seeded generator.
   *
   * @throws IllegalArgumentException unless {@code 0 < p <= 1}
   */
  static PriceAttachment withProbability(double p) {
    return new WithProbability(p);
  }

  /** Only rejects carry the price (the authors' {@code lazyResponse} option). */
  static PriceAttachment onRejectsOnly() {
    return OnRejectsOnly.INSTANCE;
  }

  /** One response in {@code n} carries the price. */
  record EveryNth(int n) implements PriceAttachment {
    static final EveryNth EVERY = new EveryNth(1);

    public EveryNth {
      if (n < 1) {
        throw new IllegalArgumentException("price attachment: every n-th needs n >= 1, got " + n);
      }
    }

    @Override
    public String toString() {
      return n == 1 ? "always" : "every " + n + "th";
    }
  }

  /** Each response carries the price with probability {@code p}. */
  record WithProbability(double p) implements PriceAttachment {
    public WithProbability {
      if (!(p > 0 && p <= 1)) {
        throw new IllegalArgumentException("price attachment: probability must be in (0, 1], got " + p);
      }
    }

    @Override
    public String toString() {
      return "p=" + p;
    }
  }

  /** Only rejects carry the price. */
  enum OnRejectsOnly implements PriceAttachment {
    INSTANCE;

    @Override
    public String toString() {
      return "rejects only";
    }
  }
}
