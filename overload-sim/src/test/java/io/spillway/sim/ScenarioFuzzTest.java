package io.spillway.sim;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.util.ArrayList;
import java.util.List;

/**
 * The scenario parser against arbitrary files: known and unknown keys with arbitrary values. A
 * scenario is either accepted whole or refused with an {@link IllegalArgumentException} naming
 * what is wrong (what {@code ./spillway sim} prints), never anything else. In the build Jazzer
 * replays the corpus in {@code ScenarioFuzzTestInputs/} and an empty input; {@code ./spillway fuzz
 * scenario --seconds N} fuzzes for N seconds.
 */
class ScenarioFuzzTest {

  private static final List<String> KEYS = new ArrayList<>(Scenario.KEYS.keySet());

  @FuzzTest(maxDuration = "2m")
  void aScenarioIsAcceptedOrRefusedWithAReason(FuzzedDataProvider data) {
    List<String> lines = new ArrayList<>();
    int n = data.consumeInt(0, 6);
    for (int i = 0; i < n; i++) {
      String key = data.consumeBoolean() ? KEYS.get(data.consumeInt(0, KEYS.size() - 1))
          : data.consumeAsciiString(12);
      lines.add(key + " = " + data.consumeAsciiString(40));
    }
    try {
      Scenario s = Scenario.of(Scenario.parse(lines, "fuzz"));
      s.service();
      s.paths();
      s.pathServiceScales();
      s.pathHoldShares();
      s.asqmBudgetNanos();
    } catch (IllegalArgumentException refused) {
      if (refused.getMessage() == null || refused.getMessage().isBlank()) {
        throw new AssertionError("refused without a reason", refused);
      }
    }
  }
}
