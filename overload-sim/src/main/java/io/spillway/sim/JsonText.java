package io.spillway.sim;

import java.util.Locale;

/** How {@code results.json} spells numbers and strings; {@link Report} and {@link GraphReport} share it. */
final class JsonText {

  private JsonText() { }

  /** A whole number without a fraction, else six significant digits; {@code null} for NaN or infinity. */
  static String num(double v) {
    if (!Double.isFinite(v)) {
      return "null"; // JSON has no NaN or infinity
    }
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString((long) v);
    }
    return String.format(Locale.ROOT, "%.6g", v);
  }

  /** {@code s} as a JSON string literal, with quotes, backslashes and control characters escaped. */
  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
