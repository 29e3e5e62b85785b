package io.spillway.sim;

/**
 * One row of results.json: a scheme at a demand level (steady runs) or in one time window
 * (scheduled runs). Rates are per second of simulated time; latencies are end to end, client
 * queueing included, over the responses received (rejected and expired requests have none).
 * A ratio whose count is zero (a drop rate with nothing received, the others with nothing issued)
 * is NaN, written as null in results.json and shown as a dash.
 *
 * @param scheme the scheme's name
 * @param clients client sessions
 * @param demand offered load as a multiple of capacity
 * @param capacityRps the capacity demand is relative to
 * @param offeredRps requests issued by the clients
 * @param throughputRps successful responses received
 * @param goodputRps successful responses within the SLO
 * @param p50Micros median latency
 * @param p99Micros 99th-percentile latency
 * @param sloMicros the SLO
 * @param dropRate server rejects ÷ requests received by the server
 * @param rejectDelayMicros mean time from a request leaving the client to its reject arriving
 * @param expiredRate requests expired in client queues ÷ requests issued
 * @param messagesPerRequest server messages in and out ÷ requests issued
 * @param windowStartMillis for time-series rows, the window's start; -1 for steady rows
 * @param windowMillis for time-series rows, the window's length; 0 for steady rows
 * @param retryRate requests retried on a replica ÷ requests issued (0 with one server)
 * @param rejectDelayP99Micros 99th percentile of the reject delay
 */
public record ResultRecord(String scheme, int clients, double demand, double capacityRps,
    double offeredRps, double throughputRps, double goodputRps, double p50Micros,
    double p99Micros, double sloMicros, double dropRate, double rejectDelayMicros,
    double expiredRate, double messagesPerRequest, double windowStartMillis,
    double windowMillis, double retryRate, double rejectDelayP99Micros) {

  public static ResultRecord of(String scheme, Scenario scenario, double demand, double capacityRps,
      Tally t, long spanNanos, double windowStartMillis, double windowMillis) {
    double seconds = spanNanos / 1e9;
    return new ResultRecord(scheme, scenario.clients(), demand, capacityRps,
        t.offered / seconds, t.completed / seconds, t.good / seconds,
        t.percentileMicros(50), t.percentileMicros(99), scenario.sloNanos() / 1000.0,
        t.dropRate(), t.meanRejectDelayMicros(),
        Tally.ratio(t.expired, t.offered), Tally.ratio(t.messagesIn + t.messagesOut, t.offered),
        windowStartMillis, windowMillis, Tally.ratio(t.retried, t.offered),
        t.rejectDelayP99Micros());
  }
}
