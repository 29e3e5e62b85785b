package io.spillway.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** DAGOR's server and client gates: windows, rejects above the level, the piggybacked level, local drops. */
class DagorGatesTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;

  private long delay;

  private DagorServerGate server(VirtualClock clock, DagorConfig config) {
    return new DagorServerGate(config, new ServerEnvironment(clock, clock, now -> delay,
        ControlChannel.DISCARD, OverloadMetrics.NONE, 4));
  }

  private static ServerPermit admit(DagorServerGate gate, int priority, long now) {
    return gate.admit(new RequestMetadata().sessionId(1).priority(priority), now);
  }

  @Test
  void overloadedWindowsLowerTheLevelAndRejectsCarryIt() {
    long origin = Long.MAX_VALUE - 2 * MS; // windows straddle the wrap
    VirtualClock clock = new VirtualClock(origin);
    DagorServerGate gate = server(clock, DagorConfig.forSlo(200 * US)); // q = 70 µs
    delay = 100 * US;
    for (int p = 1; p <= 128; p++) {
      admit(gate, p, origin).complete(Outcome.SUCCESS, origin, new ResponseMetadata());
    }
    assertEquals(128, gate.level(), "the first window is still open");
    admit(gate, 1, origin + MS).complete(Outcome.SUCCESS, origin + MS, new ResponseMetadata());
    // window of 129 requests: 1 at priority 1 twice, once each above; N(128) = 129 → N(L') ≤ 122.55
    assertEquals(121, gate.level());
    ServerPermit rejected = admit(gate, 122, origin + MS + 1);
    assertFalse(rejected.isAdmitted());
    assertEquals(Status.REJECTED_LIMIT, rejected.status());
    ResponseMetadata reject = new ResponseMetadata();
    rejected.complete(Outcome.DROPPED, origin + MS + 2, reject);
    assertEquals(Status.REJECTED_LIMIT, reject.status());
    assertEquals(121, reject.threshold());
    assertTrue(admit(gate, 121, origin + MS + 3).isAdmitted());
  }

  @Test
  void twoThousandRequestsCloseAWindowBeforeTheMillisecond() {
    VirtualClock clock = new VirtualClock();
    DagorServerGate gate = server(clock, DagorConfig.forSlo(200 * US));
    delay = 100 * US;
    for (int i = 0; i < 2_000; i++) {
      admit(gate, 1 + i % 128, i).complete(Outcome.SUCCESS, i, new ResponseMetadata());
    }
    assertTrue(gate.level() < 128, "closed by count after 2 µs: " + gate.level());
  }

  @Test
  void priorityOneIsNeverRejectedAndMissingPrioritiesCountAsOne() {
    VirtualClock clock = new VirtualClock();
    DagorServerGate gate = server(clock, DagorConfig.forSlo(200 * US).withWindowRequests(1));
    delay = 10 * MS;
    for (int i = 0; i < 300; i++) {
      admit(gate, 0, i).complete(Outcome.SUCCESS, i, new ResponseMetadata()); // no priority: uniform prior
    }
    assertEquals(1, gate.level());
    assertTrue(admit(gate, 1, 300).isAdmitted());
    assertTrue(admit(gate, 0, 301).isAdmitted());
    assertFalse(admit(gate, 2, 302).isAdmitted());
    delay = 0;
    admit(gate, 1, 303);
    assertEquals(2, gate.level(), "a calm window probes one level up");
  }

  @Test
  void clientsTagPrioritiesAndShedWhatTheLevelRejects() {
    DagorClientGate<Integer> gate = new DagorClientGate<>(DagorConfig.forSlo(200 * US),
        new ClientEnvironment(5, 200 * US, OverloadMetrics.NONE));
    RequestMetadata header = new RequestMetadata();
    List<Integer> priorities = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      assertTrue(gate.offer(i, 0), "level 128 admits all");
      header.reset();
      gate.poll(0, header);
      assertEquals(5, header.sessionId());
      priorities.add(header.priority());
    }
    assertEquals(1, priorities.stream().mapToInt(Integer::intValue).min().orElseThrow());
    assertEquals(128, priorities.stream().mapToInt(Integer::intValue).max().orElseThrow());
    gate.onResponse(new ResponseMetadata().status(Status.REJECTED_LIMIT).threshold(32), 0, 10 * US);
    assertEquals(32, gate.level());
    int sent = 0;
    for (int i = 0; i < 1_000; i++) {
      if (gate.offer(i, 20 * US)) {
        header.reset();
        gate.poll(20 * US, header);
        assertTrue(header.priority() <= 32, "sent priority " + header.priority());
        sent++;
      }
    }
    assertTrue(sent > 150 && sent < 350, "about a quarter pass level 32: " + sent);
    gate.onResponse(new ResponseMetadata().status(Status.OK), 0, 30 * US); // no threshold: keep 32
    assertEquals(32, gate.level());
  }

  /** A sub-request inside a call graph: it carries its request's priority. */
  private record SubRequest(int inheritedPriority) implements io.spillway.api.InheritedPriority { }

  @Test
  void subRequestsKeepTheirRequestsPriorityAndAreShedByIt() {
    DagorClientGate<SubRequest> gate = new DagorClientGate<>(DagorConfig.forSlo(200 * US),
        new ClientEnvironment(5, 200 * US, OverloadMetrics.NONE));
    gate.onResponse(new ResponseMetadata().threshold(40), 0, 0); // the callee admits 1..40
    assertFalse(gate.offer(new SubRequest(41), 0), "priority 41 is above the callee's level");
    assertTrue(gate.offer(new SubRequest(40), 0));
    assertTrue(gate.offer(new SubRequest(1), 0));
    RequestMetadata header = new RequestMetadata();
    assertEquals(40, gate.poll(0, header).inheritedPriority());
    assertEquals(40, header.priority(), "sent with the inherited priority, not a new draw");
    assertEquals(1, gate.poll(0, header.reset()).inheritedPriority());
    assertEquals(1, header.priority());
  }
}
