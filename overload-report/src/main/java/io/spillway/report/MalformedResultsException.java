package io.spillway.report;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A {@code results.json} that exists but cannot be read as results: not JSON, JSON without the
 * fields a report needs ({@code records}, and in each record {@code scheme} and finite numbers
 * {@code demand} and {@code goodput_rps}), a {@code null} entry where a row belongs, or two rows
 * for one scheme at one demand level (or one time window), which no chart could tell apart. The
 * message names the file, the line and column where the reader stopped and the JSON path of the
 * offending field, for example {@code records[3].scheme}. Also thrown for
 * a {@code surge-windows.csv} beside it that lacks a needed column or holds a row that does not
 * parse; the message then names the file and line.
 *
 * <p>Immutable; safe to share between threads.
 */
public final class MalformedResultsException extends IOException {

  private static final long serialVersionUID = 1L;

  private final transient Path file;

  MalformedResultsException(Path file, String detail, Throwable cause) {
    super("malformed results file " + file + ": " + detail, cause);
    this.file = file;
  }

  /** The file that could not be read. */
  public Path file() {
    return file;
  }
}
