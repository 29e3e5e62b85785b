package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class CorpusTest {

  @Test
  void wordNetHasEverySynsetAsAnEnglishDocument() {
    Corpus all = Corpus.wordNet();
    assertEquals(Corpus.WORDNET_SIZE, all.size());
    long withThe = all.docs().stream().filter(d -> d.body().contains(" the ")).count();
    assertTrue(withThe > 10_000, "English glosses: " + withThe + " contain ' the '");
    for (int i = 0; i < all.size(); i++) {
      Corpus.Doc d = all.docs().get(i);
      assertEquals(i, d.id());
      assertTrue(!d.title().isEmpty() && !d.body().isEmpty(), d.toString());
    }
  }

  @Test
  void aSampleIsSpreadOverTheWholeCorpusAndKeepsItsIds() {
    Corpus sample = Corpus.wordNet(2_000);
    assertEquals(2_000, sample.size());
    List<Corpus.Doc> docs = sample.docs();
    assertEquals(0, docs.get(0).id());
    assertTrue(docs.get(1_999).id() > Corpus.WORDNET_SIZE - 100, "last id " + docs.get(1_999).id());
    for (int i = 1; i < docs.size(); i++) {
      assertTrue(docs.get(i).id() > docs.get(i - 1).id());
    }
    assertThrows(IllegalArgumentException.class, () -> Corpus.wordNet(0));
  }

  @Test
  void parsesLemmasAndGlossOfADataLine() {
    Corpus.Doc d = Corpus.parse(7, "00978171 04 n 03 safety_blitz 0 linebacker_blitzing 0 blitz 2 002"
        + " @ 00557350 n 0000 ;c 00470726 n 0000 | (American football) defensive players try to"
        + " break through the offensive line  ");
    assertEquals(new Corpus.Doc(7, "safety blitz, linebacker blitzing, blitz",
        "(American football) defensive players try to break through the offensive line"), d);
    Corpus.Doc adj = Corpus.parse(1, "00004296 00 s 02 adducent(a) 0 adductive 0 001 & 00004171 a"
        + " 0000 | especially of muscles; bringing together");
    assertEquals("adducent, adductive", adj.title());
    assertNull(Corpus.parse(0, "  1 This software and database is being provided to you"));
  }
}
