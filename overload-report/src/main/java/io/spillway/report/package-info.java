/**
 * Plots and a one-page report from {@code results.json}. The API is {@link
 * io.spillway.report.ReportWriter} (and the {@link io.spillway.report.MalformedResultsException}
 * it throws), and the two chart writers other modules draw their own figures with, {@link
 * io.spillway.report.LineChart} and {@link io.spillway.report.MatrixChart}; every other type here
 * is package-private.
 *
 * <p>Measures follow DESIGN.md, "Measures": goodput counts responses within the SLO, latency is
 * end to end with client queueing, drop rate is server rejects ÷ requests received (for a
 * time-series phase, over the whole phase, not a mean of its windows' ratios), and percentiles are
 * never averaged (a time-series phase reports the p99 of all its responses, and the median and the
 * worst of its per-window p99s). A latency of 0 is the producers' "no responses" and is never shown
 * as 0 µs.
 */
package io.spillway.report;
