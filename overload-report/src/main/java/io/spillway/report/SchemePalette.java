package io.spillway.report;

import java.awt.Color;
import java.awt.Shape;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Path2D;
import java.awt.geom.Rectangle2D;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One color and marker shape per scheme, the same on every chart of a report. Every scheme this
 * project ships (the simulator's registry and the harnesses' peers) has a fixed color of its own,
 * so {@code spillway} or {@code dagor} looks the same in every report and never takes another
 * shipped scheme's color; other names take the remaining colors in order of first appearance.
 * Marker shapes go by order of appearance within the report.
 *
 * <p>The papers' own schemes have the Okabe–Ito palette (distinguishable with the common
 * color-vision deficiencies); the baselines and peers, more than it holds, have darker colors
 * from Paul Tol's palettes and ColorBrewer, and the Okabe–Ito yellow darkened to stay readable on
 * white.
 *
 * <p>Immutable after construction; safe to share between threads.
 */
final class SchemePalette {

  private static final Color BLACK = new Color(0x000000);
  private static final Color BLUE = new Color(0x0072B2);
  private static final Color VERMILLION = new Color(0xD55E00);
  private static final Color GREEN = new Color(0x009E73);
  private static final Color ORANGE = new Color(0xE69F00);
  private static final Color PURPLE = new Color(0xCC79A7);
  private static final Color SKY = new Color(0x56B4E9);
  private static final Color GOLD = new Color(0xB59B00);
  private static final Color BROWN = new Color(0x8C510A);
  private static final Color GREY = new Color(0x7F7F7F);
  private static final Color TEAL = new Color(0x01665E);
  private static final Color PLUM = new Color(0x762A83);
  private static final Color WINE = new Color(0x882255);
  private static final Color DARK_GREEN = new Color(0x117733);
  private static final Color INDIGO = new Color(0x332288);
  private static final Color ROSE = new Color(0xEE6677);
  private static final Color MAGENTA = new Color(0xAA3377);
  private static final Color SEA = new Color(0x44AA99);

  /*
   * One color per shipped scheme, none shared (utune and mutune are one scheme). A scheme left to
   * SPARE takes whatever is free in each report, so it would change color from one report to the
   * next and could take a color that means another scheme elsewhere (spillway in breakwater's
   * blue), and figures set side by side would disagree.
   */
  private static final Map<String, Color> FIXED = Map.ofEntries(
      Map.entry("none", BLACK),
      Map.entry("breakwater", BLUE),
      Map.entry("breakwater-credit", VERMILLION),
      Map.entry("breakwater-credit-spec", GREEN),
      Map.entry("protego", ORANGE),
      Map.entry("rajomon", PURPLE),
      Map.entry("utune", SKY),
      Map.entry("mutune", SKY),
      Map.entry("spillway", WINE),
      Map.entry("seda", GOLD),
      Map.entry("dagor", BROWN),
      Map.entry("codel", DARK_GREEN),
      Map.entry("window", INDIGO),
      Map.entry("netflix-gradient2", GREY),
      Map.entry("netflix-vegas", TEAL),
      Map.entry("netflix-aimd", PLUM),
      Map.entry("sentinel", ROSE),
      Map.entry("protego-ac", MAGENTA),
      Map.entry("protego-asqm", SEA));

  /** For names not in {@link #FIXED}: the colors no scheme in the report has, in this order. */
  private static final List<Color> SPARE = List.of(BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY,
      GOLD, BROWN, GREY, TEAL, PLUM, WINE, DARK_GREEN, INDIGO, ROSE, MAGENTA, SEA);

  private final Map<String, Color> colors = new LinkedHashMap<>();
  private final Map<String, Shape> shapes = new LinkedHashMap<>();

  SchemePalette(List<String> schemes) {
    Set<Color> used = new HashSet<>();
    for (String s : schemes) {
      Color fixed = FIXED.get(s);
      if (fixed != null) {
        colors.put(s, fixed);
        used.add(fixed);
      }
    }
    int spare = 0;
    for (String s : schemes) {
      if (colors.containsKey(s)) {
        continue;
      }
      while (spare < SPARE.size() && used.contains(SPARE.get(spare))) {
        spare++;
      }
      Color c;
      if (spare < SPARE.size()) {
        c = SPARE.get(spare++);
      } else {
        // Beyond the spare colors: a stable hue from the name.
        c = Color.getHSBColor((s.hashCode() & 0xffff) / 65536f, 0.8f, 0.7f);
      }
      colors.put(s, c);
      used.add(c);
    }
    List<Shape> marks = markers();
    int i = 0;
    for (String s : schemes) {
      shapes.put(s, marks.get(i++ % marks.size()));
    }
  }

  Color color(String scheme) {
    Color c = colors.get(scheme);
    return c == null ? Color.GRAY : c;
  }

  Shape shape(String scheme) {
    Shape s = shapes.get(scheme);
    return s == null ? markers().get(0) : s;
  }

  private static List<Shape> markers() {
    double r = 4;
    Path2D.Double triangle = new Path2D.Double();
    triangle.moveTo(0, -r - 1);
    triangle.lineTo(r + 1, r);
    triangle.lineTo(-r - 1, r);
    triangle.closePath();
    Path2D.Double diamond = new Path2D.Double();
    diamond.moveTo(0, -r - 1);
    diamond.lineTo(r + 1, 0);
    diamond.lineTo(0, r + 1);
    diamond.lineTo(-r - 1, 0);
    diamond.closePath();
    return List.of(new Ellipse2D.Double(-r, -r, 2 * r, 2 * r),
        new Rectangle2D.Double(-r, -r, 2 * r, 2 * r), triangle, diamond);
  }
}
