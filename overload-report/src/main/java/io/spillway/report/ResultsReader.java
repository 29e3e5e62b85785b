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

/** Reads {@code results.json} into {@link Results}, with errors that name the file. */
final class ResultsReader {

  /*
   * ALLOW_NON_NUMERIC_NUMBERS: the simulator formats doubles with %.6g, which prints a bare NaN
   * (not valid JSON) for, say, the p99 of a window without responses. Reading it as NaN is more
   * useful than refusing the whole file.
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
    return results;
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
