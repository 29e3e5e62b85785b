package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Cancellable;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.credit.Spillway;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Sessions with origins the client stops calling are retired once idle: their credit streams end,
 * their servers deregister them, and the map keeps only the origins in use. Driven in virtual
 * time: the test moves the clock and runs the scheduler's tasks as they fall due.
 */
class SpillwayHttpSessionsTest {

  private static final long SLO_NANOS = 50_000_000;
  /** The idle period for a 50 ms SLO: the floor, 30 s (a hundred SLOs is only 5 s). */
  private static final long IDLE_NANOS = 30_000_000_000L;
  /** How often the sweep runs: a quarter of the idle period. */
  private static final long SWEEP_NANOS = IDLE_NANOS / 4;
  private static final URI ORDERS = URI.create("http://orders:8080/orders/1");

  private final VirtualTime time = new VirtualTime();
  private final Streams streams = new Streams();
  private final SpillwayHttpSessions sessions = new SpillwayHttpSessions(SLO_NANOS,
      Spillway::forSloNanos, time, time, streams);

  @AfterEach
  void close() {
    sessions.close();
  }

  /**
   * A clock and a scheduler in one, moved by the test: {@link #advance} runs each task due on the
   * way at its due time. Started near {@code Long.MAX_VALUE} to catch wrap-around. Thread-safe;
   * tasks run on the thread that advances, outside the lock.
   */
  private static final class VirtualTime implements Ticker, Scheduler {
    private static final long START = Long.MAX_VALUE - 3_600_000_000_000L;

    private record Task(long due, long seq, Runnable run, AtomicBoolean cancelled) { }

    private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) -> a.due != b.due
        ? Long.compare(a.due, b.due) : Long.compare(a.seq, b.seq));
    /** Nanoseconds since {@link #START}. */
    private long elapsed;
    private long seq;

    @Override
    public synchronized long read() {
      return START + elapsed;
    }

    @Override
    public synchronized Cancellable schedule(Runnable task, long delayNanos) {
      AtomicBoolean cancelled = new AtomicBoolean();
      tasks.add(new Task(elapsed + delayNanos, seq++, task, cancelled));
      return () -> cancelled.set(true);
    }

    /** Moves the clock on by {@code nanos}, running what falls due at its time. */
    void advance(long nanos) {
      long target;
      synchronized (this) {
        target = elapsed + nanos;
      }
      for (;;) {
        Task next;
        synchronized (this) {
          next = tasks.peek();
          if (next == null || next.due > target) {
            elapsed = Math.max(elapsed, target);
            return;
          }
          tasks.poll();
          elapsed = Math.max(elapsed, next.due);
        }
        if (!next.cancelled.get()) {
          next.run.run();
        }
      }
    }
  }

  /**
   * A Spillway server's side of the credit streams: each is answered as it opens (unless told to
   * hold them), with one gate; records which were opened, ended and deregistered.
   */
  private static final class Streams implements SpillwayHttpSession.CreditStreams {
    final List<Long> opened = new CopyOnWriteArrayList<>();
    final List<Long> cancelled = new CopyOnWriteArrayList<>();
    final List<Long> deregistered = new CopyOnWriteArrayList<>();
    final Map<Long, Listener> unanswered = new ConcurrentHashMap<>();
    /** The key each answered stream was given. */
    final Map<Long, String> keys = new ConcurrentHashMap<>();
    volatile boolean answerAtOnce = true;

    @Override
    public Cancellable open(URI stream, long sessionId, Listener listener) {
      opened.add(sessionId);
      if (answerAtOnce) {
        answer(sessionId, listener);
      } else {
        unanswered.put(sessionId, listener);
      }
      return () -> cancelled.add(sessionId);
    }

    @Override
    public void deregister(URI stream, long sessionId, String streamKey) {
      assertThat(streamKey).as("the deregistration carries the key of the session's stream")
          .isEqualTo(keys.get(sessionId));
      deregistered.add(sessionId);
    }

    @Override
    public void demand(URI stream, long sessionId, String streamKey, int gate, int demand) { }

    /** Answers the stream of {@code sessionId}, with a key of its own. */
    void answer(long sessionId, Listener listener) {
      String key = "key-" + sessionId;
      keys.put(sessionId, key);
      listener.opened(null, key);
    }
  }

  /** Ten idle periods pass, and {@code session} stays, its stream open. */
  private void keptThroughTenPeriods(SpillwayHttpSession session) {
    time.advance(10 * IDLE_NANOS);
    assertThat(sessions.sessions()).containsValue(session);
    assertThat(streams.cancelled).isEmpty();
  }

  /** The session id a released request carries. */
  private static long sessionIdOf(SpillwayHttpSession.Ticket t) {
    Map<String, String> h = new HashMap<>();
    t.writeHeaders(h::put);
    return Long.parseLong(h.get(SpillwayHttpHeaders.SESSION));
  }

  /** The server's answer, which keeps the session's window as it is. */
  private static void answer(SpillwayHttpSession session, SpillwayHttpSession.Ticket t) {
    Map<String, String> h = Map.of(SpillwayHttpHeaders.STATUS, "0",
        SpillwayHttpHeaders.CREDIT_DELTA, "0");
    session.onAnswer(t, 200, h::get);
  }

  /** One request to {@code uri}, as the client filters make it: sent and answered at once. */
  private long call(URI uri) {
    SpillwayHttpSession session = sessions.of(uri);
    SpillwayHttpSession.Ticket t = session.offer(uri.getRawPath());
    assertThat(t.released()).isCompleted();
    long id = sessionIdOf(t);
    answer(session, t);
    return id;
  }

  @Test
  void aSessionIdlePastThePeriodIsClosedAndRemovedAndTheOriginsNextRequestGetsANewOne() {
    long first = call(ORDERS);
    assertThat(streams.opened).containsExactly(first);

    time.advance(IDLE_NANOS - 1);
    assertThat(sessions.sessions()).as("idle for less than the period").hasSize(1);
    time.advance(SWEEP_NANOS + 1); // the next sweep after the period has run
    assertThat(sessions.sessions()).as("idle past the period").isEmpty();
    assertThat(streams.cancelled).as("its credit stream ended").containsExactly(first);
    assertThat(streams.deregistered).as("and the server told").containsExactly(first);

    long second = call(ORDERS);
    assertThat(second).as("a new session, under a new id").isNotEqualTo(first);
    assertThat(streams.opened).containsExactly(first, second);
    assertThat(sessions.sessions()).hasSize(1);
  }

  /** A request in flight keeps its session however long it takes, and its end starts the count. */
  @Test
  void aSessionWithARequestInFlightIsNeverRetired() {
    SpillwayHttpSession session = sessions.of(ORDERS);
    SpillwayHttpSession.Ticket slow = session.offer("/orders/1");
    assertThat(slow.released()).isCompleted();

    keptThroughTenPeriods(session);

    answer(session, slow);
    time.advance(IDLE_NANOS - SWEEP_NANOS);
    assertThat(sessions.sessions()).as("idle only since the answer").containsValue(session);
    time.advance(2 * SWEEP_NANOS);
    assertThat(sessions.sessions()).isEmpty();
    assertThat(streams.deregistered).containsExactly(sessionIdOf(slow));
  }

  /** A request held while the credit stream opens is queued: its session stays, however long. */
  @Test
  void aSessionWithARequestHeldForItsStreamIsNeverRetired() {
    streams.answerAtOnce = false;
    SpillwayHttpSession session = sessions.of(ORDERS);
    SpillwayHttpSession.Ticket held = session.offer("/orders/1");
    assertThat(held.released()).isNotDone();

    keptThroughTenPeriods(session);

    streams.unanswered.forEach(streams::answer);
    assertThat(held.released()).isCompleted();
    answer(session, held);
    time.advance(IDLE_NANOS + SWEEP_NANOS);
    assertThat(sessions.sessions()).isEmpty();
  }

  /**
   * A request queued for a credit, with nothing in flight, as the sweep finds the session idle
   * for the period by its last answer: the queued request keeps it.
   */
  @Test
  void aSessionWithARequestQueuedForACreditIsNotRetired() {
    SpillwayHttpSession session = sessions.of(ORDERS);
    SpillwayHttpSession.Ticket first = session.offer("/orders/1");
    long id = sessionIdOf(first);
    Map<String, String> revoked = Map.of(SpillwayHttpHeaders.STATUS, "0",
        SpillwayHttpHeaders.CREDIT_DELTA, "-1");
    session.onAnswer(first, 200, revoked::get); // drained: the next request waits for a credit

    time.advance(IDLE_NANOS - 1_000_000); // a millisecond before the sweep at the period
    SpillwayHttpSession.Ticket queued = session.offer("/orders/2");
    assertThat(queued.released()).isNotDone();
    time.advance(1_000_000);
    assertThat(sessions.sessions()).as("a request is queued").containsValue(session);
    assertThat(streams.cancelled).isEmpty();

    time.advance(SLO_NANOS); // it expires in the queue: the session is idle from then
    assertThat(queued.released()).isCompletedExceptionally();
    time.advance(IDLE_NANOS + SWEEP_NANOS);
    assertThat(sessions.sessions()).isEmpty();
    assertThat(streams.deregistered).containsExactly(id);
  }

  /**
   * The caller looked its session up, and the session is retired before the caller offers its
   * request: the request goes on the origin's new session, reported through the one the caller
   * holds, and ends there once.
   */
  @Test
  void aRequestOfferedToASessionJustRetiredGoesOnItsSuccessor() {
    long first = call(ORDERS);
    SpillwayHttpSession found = sessions.of(ORDERS);

    time.advance(IDLE_NANOS + SWEEP_NANOS); // the sweep retires it meanwhile
    assertThat(streams.deregistered).containsExactly(first);
    SpillwayHttpSession.Ticket t = found.offer("/orders/1");
    assertThat(t.released()).as("sent, not failed on the closed session").isCompleted();
    long second = sessionIdOf(t);
    assertThat(second).isNotEqualTo(first);
    assertThat(streams.opened).containsExactly(first, second);
    assertThat(streams.cancelled).as("the new session's stream is open").containsExactly(first);
    SpillwayHttpSession successor = sessions.sessions().values().iterator().next();
    assertThat(successor).isNotSameAs(found);
    assertThat(successor.sessionId()).isEqualTo(second);

    time.advance(10 * IDLE_NANOS);
    assertThat(sessions.sessions()).as("in flight on the new session").containsValue(successor);
    answer(found, t); // reported through the session the caller holds
    answer(found, t); // and again: ignored
    SpillwayHttpSession.Ticket abandoned = found.offer("/orders/2");
    found.abandon(abandoned); // the caller gave up before sending it
    time.advance(IDLE_NANOS + SWEEP_NANOS);
    assertThat(sessions.sessions()).as("both ended on the new session: it is idle").isEmpty();
    assertThat(streams.deregistered).containsExactly(first, second);
  }

  /** A request offered once the period has passed, before the sweep comes: it keeps the session. */
  @Test
  void aRequestOfferedBeforeTheSweepKeepsTheSession() {
    sessions.of(ORDERS); // the sweeps start: one every 7.5 s from now
    time.advance(1_000_000_000L);
    long first = call(ORDERS);
    time.advance(IDLE_NANOS + 1_000_000); // idle past the period; the sweep at 37.5 s is to come
    SpillwayHttpSession session = sessions.of(ORDERS);
    SpillwayHttpSession.Ticket t = session.offer("/orders/1");
    time.advance(SWEEP_NANOS);
    assertThat(sessions.sessions()).containsValue(session);
    assertThat(sessionIdOf(t)).isEqualTo(first);
    answer(session, t);
    assertThat(streams.cancelled).isEmpty();
  }

  /**
   * Requests made one after another while another thread keeps moving the clock past the idle
   * period and sweeping: every one is sent (none fails on a retired session), on a session whose
   * stream was opened, and ends there; at the end every stream opened was ended and deregistered
   * exactly once.
   */
  @Test
  void requestsRacingTheRetirementAreSentOnLiveSessionsAndEndOnce() throws Exception {
    int requests = 20_000;
    CountDownLatch start = new CountDownLatch(1);
    AtomicBoolean done = new AtomicBoolean();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Long> sentOn = new ArrayList<>();
    Thread client = Thread.ofPlatform().start(() -> {
      try {
        start.await();
        for (int i = 0; i < requests; i++) {
          SpillwayHttpSession session = sessions.of(ORDERS);
          SpillwayHttpSession.Ticket t = session.offer("/orders/" + i);
          assertThat(t.released()).isCompleted();
          sentOn.add(sessionIdOf(t));
          answer(session, t);
        }
      } catch (Throwable e) {
        failed.set(e);
      } finally {
        done.set(true);
      }
    });
    Thread sweeper = Thread.ofPlatform().start(() -> {
      try {
        start.await();
        while (!done.get()) {
          time.advance(IDLE_NANOS + SWEEP_NANOS);
        }
      } catch (Throwable e) {
        failed.compareAndSet(null, e);
      }
    });
    start.countDown();
    client.join();
    sweeper.join();
    assertThat(failed.get()).isNull();

    assertThat(sentOn).hasSize(requests);
    assertThat(streams.opened).containsAll(Set.copyOf(sentOn));
    time.advance(IDLE_NANOS + SWEEP_NANOS);
    assertThat(sessions.sessions()).as("every request ended: every session went idle").isEmpty();
    assertThat(streams.deregistered).as("each stream ended once")
        .doesNotHaveDuplicates()
        .containsExactlyInAnyOrderElementsOf(streams.opened);
    assertThat(streams.cancelled).containsExactlyInAnyOrderElementsOf(streams.opened);
  }

  /**
   * A client that calls a host per tenant, each once: after the period only the origins called
   * within it keep a session, a stream and a registration.
   */
  @Test
  void manyOriginsCalledOnceLeaveOnlyTheRecentOnesOpen() {
    for (int i = 0; i < 200; i++) {
      call(URI.create("http://tenant-" + i + ".example:8080/orders"));
    }
    time.advance(IDLE_NANOS - 10_000_000_000L);
    Set<String> recent = IntStream.range(200, 203)
        .mapToObj(i -> "http://tenant-" + i + ".example:8080").collect(Collectors.toSet());
    recent.forEach(o -> call(URI.create(o + "/orders")));
    time.advance(15_000_000_000L);

    assertThat(sessions.sessions().keySet()).isEqualTo(recent);
    assertThat(streams.opened).hasSize(203);
    assertThat(streams.cancelled).hasSize(200).doesNotHaveDuplicates();
    assertThat(streams.deregistered).hasSize(200).doesNotHaveDuplicates();
  }

  /** With a longer SLO the period is a hundred SLOs: a 1 s SLO keeps a session 100 s. */
  @Test
  void theIdlePeriodIsAHundredSlosAboveTheFloor() {
    try (SpillwayHttpSessions slow = new SpillwayHttpSessions(1_000_000_000L,
        Spillway::forSloNanos, time, time, streams)) {
      SpillwayHttpSession session = slow.of(ORDERS);
      SpillwayHttpSession.Ticket t = session.offer("/orders/1");
      answer(session, t);
      time.advance(99_000_000_000L);
      assertThat(slow.sessions()).containsValue(session);
      time.advance(1_000_000_000L + 25_000_000_000L); // the period, and a quarter of it
      assertThat(slow.sessions()).isEmpty();
    }
  }
}
