/**
 * Plots and a one-page report from {@code results.json}. The API is {@link
 * io.spillway.report.ReportWriter} (and the {@link io.spillway.report.MalformedResultsException}
 * it throws); every other type here is package-private.
 *
 * <p>Measures follow DESIGN.md, "Measures": goodput counts responses within the SLO, latency is
 * end to end with client queueing, drop rate is server rejects ÷ requests received, and
 * percentiles are never averaged (a time-series phase reports the median and the worst of its
 * per-window p99s instead).
 */
package io.spillway.report;
