package io.spillway.report;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Reads {@code results.json} into {@link Results}, with errors that name the file. */
final class ResultsReader {

  /*
   * ALLOW_NON_NUMERIC_NUMBERS: a harness that formats doubles with String.format prints a bare NaN
   * (not valid JSON) for a value it does not have, such as a capacity it did not measure. Reading
   * it as NaN, shown as a dash, is more useful than refusing the whole file; where a number is
   * required, Results refuses NaN by name.
   */
  private static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  private ResultsReader() { }

  /**
   * Reads one results file.
   *
   * @throws NoSuchFileException if {@code file} does not exist (the message names it)
   * @throws MalformedResultsException if it is not JSON or lacks required fields
   * @throws IOException if it cannot be read
   */
  static Results read(Path file) throws IOException {
    if (Files.isDirectory(file)) {
      throw new NoSuchFileException(file.toString(), null,
          "is a directory, expected a results.json file");
    }
    if (!Files.exists(file)) {
      throw new NoSuchFileException(file.toString(), null, "results file not found");
    }
    Results results;
    try (InputStream in = Files.newInputStream(file)) {
      results = MAPPER.readValue(in, Results.class);
    } catch (JsonProcessingException e) {
      throw new MalformedResultsException(file, describe(e), e);
    }
    if (results == null) {
      throw new MalformedResultsException(file, "empty document (expected a JSON object)", null);
    }
    if (results.records().isEmpty()) {
      throw new MalformedResultsException(file, "\"records\" is empty: nothing to report", null);
    }
    String repeated = repeated("records", results.records());
    if (repeated == null) {
      repeated = repeated("phases", results.phases());
    }
    if (repeated != null) {
      throw new MalformedResultsException(file, repeated, null);
    }
    return results;
  }

  /**
   * The first row of {@code rows} with the key of an earlier one, described, or null. A row is one
   * scheme at one demand level, or one scheme's window (or phase) starting at {@code t_ms}; two
   * rows with one key cannot be told apart in a table or on a chart, where they would join into
   * one zigzag series. A call-graph run writes a row per interface, a field this reader does not
   * know, so its rows repeat in this sense.
   */
  static String repeated(String field, List<Results.Row> rows) {
    Map<List<Object>, Integer> seen = new HashMap<>();
    for (int i = 0; i < rows.size(); i++) {
      Results.Row r = rows.get(i);
      List<Object> key = r.isWindow() ? List.of(r.scheme(), "t_ms", r.windowStartMillis())
          : List.of(r.scheme(), "demand", r.demand());
      Integer first = seen.putIfAbsent(key, i);
      if (first != null) {
        return String.format(Locale.ROOT, "%s[%d] repeats %s[%d]: scheme \"%s\", %s %s (one row "
            + "per scheme and demand level, or per scheme and t_ms; rows that differ only in a "
            + "field this reader does not know, such as a call-graph run's \"interface\", "
            + "cannot be told apart)", field, i, field, first, r.scheme(), key.get(1),
            ReportMarkdown.plain((Double) key.get(2)));
      }
    }
    return null;
  }

  /** Jackson's message without its source dump, plus line, column and JSON path. */
  static String describe(JsonProcessingException e) {
    StringBuilder b = new StringBuilder();
    String message = e.getOriginalMessage();
    if (e.getCause() instanceof IllegalArgumentException iae && iae.getMessage() != null) {
      message = iae.getMessage();
    }
    // "(index 0)" is the creator argument's position, which means nothing to the file's author.
    b.append(message == null ? e.getClass().getSimpleName()
        : message.strip().replaceAll(" \\(index \\d+\\)", ""));
    JsonLocation at = e.getLocation();
    if (at != null && at.getLineNr() > 0) {
      b.append(" (line ").append(at.getLineNr()).append(", column ").append(at.getColumnNr())
          .append(')');
    }
    if (e instanceof JsonMappingException m && !m.getPath().isEmpty()) {
      b.append(" at ").append(jsonPath(m));
    }
    return b.toString();
  }

  private static String jsonPath(JsonMappingException m) {
    StringBuilder b = new StringBuilder();
    for (JsonMappingException.Reference r : m.getPath()) {
      if (r.getFieldName() != null) {
        if (!b.isEmpty()) {
          b.append('.');
        }
        b.append(r.getFieldName());
      } else if (r.getIndex() >= 0) {
        b.append('[').append(r.getIndex()).append(']');
      }
    }
    return b.toString();
  }
}
