package io.spillway.jmh;

import io.spillway.api.Cancellable;
import io.spillway.api.ControlChannel;
import io.spillway.api.NoControl;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.Spillway;
import java.util.ArrayDeque;
import java.util.Queue;

/**
 * Breakwater's gate, the default scheme's and the {@code none} gate, made by their schemes as a
 * user makes them (SLO 200 µs), with {@code sessions} sessions registered and the credit pools
 * grown so that every request of every session admits: what the gate benchmarks time. The gates
 * read time from {@link #now}; their control loops run on a scheduler driven here by hand, so no
 * timer runs during a measurement.
 */
final class WarmedGates {

  final ServerGate breakwater;
  final ServerGate spillway;
  final ServerGate none;
  /** The gates' clock: where the warm-up left it; a benchmark may advance it. */
  long now;

  WarmedGates(int sessions) {
    Queue<Runnable> due = new ArrayDeque<>();
    Scheduler byHand = (task, delay) -> {
      due.add(task);
      return () -> due.remove(task);
    };
    Scheduler idle = (task, delay) -> (Cancellable) () -> { };
    breakwater = Breakwater.of(BreakwaterConfig.forSlo(200_000, 10_000)).newServerGate(
        new ServerEnvironment(() -> now, byHand, t -> 0L, ControlChannel.DISCARD,
            OverloadMetrics.NONE, 10));
    breakwater.start();
    ServerEnvironment env = new ServerEnvironment(() -> now, idle, t -> 0L, ControlChannel.DISCARD,
        OverloadMetrics.NONE, 10);
    spillway = Spillway.forSloNanos(200_000).newServerGate(env);
    none = NoControl.INSTANCE.newServerGate(env);
    RequestMetadata request = new RequestMetadata();
    ResponseMetadata response = new ResponseMetadata();
    for (int i = 1; i <= sessions; i++) {
      request.reset().sessionId(i).demand(1).flags(RequestMetadata.FLAG_REGISTER);
      breakwater.admit(request, now).complete(Outcome.SUCCESS, now, response.reset());
      spillway.admit(request, now).complete(Outcome.SUCCESS, now, response.reset());
    }
    // Grow the pool below target delay (eq. 1) so sessions hold real windows: 2,000 control
    // periods, each run reschedules the next.
    for (int i = 0; i < 2_000; i++) {
      due.remove().run();
    }
    if (due.size() != 1) {
      throw new IllegalStateException("the control loop holds " + due.size() + " runs, not one");
    }
    // The default's pool grows on admissions, one step each twentieth of the SLO, while in use.
    for (int i = 0; i < 200 * sessions; i++) {
      now += 10_000;
      request.reset().sessionId(1 + i % sessions).demand(2);
      ServerPermit p = spillway.admit(request, now);
      p.started(now);
      p.complete(p.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED, now, response.reset());
    }
    for (int s = 1; s <= sessions; s++) {
      request.reset().sessionId(s).demand(2);
      ServerPermit p = spillway.admit(request, ++now);
      if (!p.isAdmitted()) {
        throw new IllegalStateException("the default's pool did not grow: " + p.status());
      }
      p.complete(Outcome.SUCCESS, ++now, response.reset());
    }
  }
}
