package io.spillway.price;

/**
 * How a client's {@link TokenWallet} is replenished (rajomon-nsdi25 §3.3 "Asynchronous Token
 * Generation"; the authors' {@code tokenRefillDist} in {@code initOptions.go}, {@code
 * tokenRefill}). Every kind adds tokens in discrete refill events whose mean spacing is the
 * configured refill interval.
 */
public enum TokenRefill {

  /**
   * Refill events form a Poisson process (exponential gaps with the interval as mean), each adding
   * the configured step. The paper's choice: it "disperses token generation and client requests
   * across time", so clients do not all send at the start of a period.
   */
  POISSON,

  /**
   * Exactly the step every interval. The authors' code default ({@code "fixed"}); the paper shows
   * it makes clients synchronise and send in bursts.
   */
  FIXED,

  /**
   * Every interval, a uniform random amount in {@code [0, 2·step − 1]} (the authors' {@code
   * "uniform"}: {@code rand.Int63n(tokenUpdateStep * 2)}), mean {@code step − ½}. The paper: it
   * "ameliorates this problem but does not fully resolve it".
   */
  UNIFORM
}
