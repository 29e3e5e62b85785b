package trial;

import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** The server gate's reports, counted; written to a file every 100 ms. */
final class Stats implements OverloadMetrics {
  final Map<Status, LongAdder> admissions = new EnumMap<>(Status.class);
  final Map<Outcome, LongAdder> completions = new EnumMap<>(Outcome.class);
  final LongAdder handlerStarts = new LongAdder();
  final LongAdder handlerEnds = new LongAdder();
  final LongAdder backendCalls = new LongAdder();
  final LongAdder backendCallEnds = new LongAdder();
  final Map<String, LongAdder> backendStatus = new java.util.concurrent.ConcurrentHashMap<>();
  volatile long creditsTotal, creditsIssued; volatile int sessions;

  Stats() {
    for (Status s : Status.values()) admissions.put(s, new LongAdder());
    for (Outcome o : Outcome.values()) completions.put(o, new LongAdder());
  }

  @Override public void onAdmission(Status decision) { admissions.get(decision).increment(); }
  @Override public void onCompletion(Outcome outcome) { completions.get(outcome).increment(); }
  @Override public void onCreditPool(long total, long issued, int s) { creditsTotal = total; creditsIssued = issued; sessions = s; }

  long inFlightPermits() {
    long ended = 0;
    for (var e : completions.entrySet()) if (e.getKey() != Outcome.DROPPED) ended += e.getValue().sum();
    return admissions.get(Status.OK).sum() - ended;
  }

  String line() {
    StringBuilder b = new StringBuilder();
    b.append("inflightPermits=").append(inFlightPermits());
    b.append(" handlersRunning=").append(handlerStarts.sum() - handlerEnds.sum());
    b.append(" backendCallsOpen=").append(backendCalls.sum() - backendCallEnds.sum());
    b.append(" credits=").append(creditsIssued).append('/').append(creditsTotal).append(" sessions=").append(sessions);
    b.append(" adm{");
    admissions.forEach((k, v) -> { if (v.sum() > 0) b.append(k).append('=').append(v.sum()).append(' '); });
    b.append("} end{");
    completions.forEach((k, v) -> { if (v.sum() > 0) b.append(k).append('=').append(v.sum()).append(' '); });
    b.append("} backendStatus").append(backendStatus);
    return b.toString();
  }

  void writeEvery(Path file) {
    Thread.ofPlatform().daemon().name("stats").start(() -> {
      while (true) {
        try {
          Files.writeString(file, line() + "\n");
          Thread.sleep(100);
        } catch (Exception e) { return; }
      }
    });
  }
}
