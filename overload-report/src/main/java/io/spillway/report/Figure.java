package io.spillway.report;

import java.util.List;
import org.jfree.chart.JFreeChart;

/**
 * One chart of a report before it is written.
 *
 * @param fileName the PNG's name inside the output directory
 * @param caption what the chart shows, for report.md
 * @param chart the chart, drawn once; not shared with other threads
 * @param notes what the chart leaves out or clamps (also drawn on the chart), may be empty
 */
record Figure(String fileName, String caption, JFreeChart chart, List<String> notes) {

  Figure {
    notes = List.copyOf(notes);
  }
}
