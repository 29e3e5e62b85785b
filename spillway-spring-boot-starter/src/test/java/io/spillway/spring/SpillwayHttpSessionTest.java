package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.spillway.api.Cancellable;
import io.spillway.api.NoControl;
import io.spillway.api.Scheduler;
import io.spillway.api.Status;
import io.spillway.credit.Spillway;
import io.spillway.spring.app.ManualTicker;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A client session with one HTTP server, driven in virtual time: a manual clock, a scheduler
 * whose tasks the test runs, and a credit stream the test plays the server's side of.
 */
class SpillwayHttpSessionTest {

  private static final URI SERVER = URI.create("http://svc:8080");
  private static final long SLO_MS = 50;

  private final ManualTicker ticker = new ManualTicker();
  private final List<Runnable> timers = new ArrayList<>();
  private final Scheduler scheduler = (task, delayNanos) -> {
    timers.add(task);
    return () -> timers.remove(task);
  };
  private final Streams streams = new Streams();
  private SpillwayHttpSession session;

  /** The server's side of the credit streams: what was opened and deregistered. */
  private static final class Streams implements SpillwayHttpSession.CreditStreams {
    Listener listener;
    Cancellable handle;
    boolean cancelled;
    final List<Long> deregistered = new ArrayList<>();
    /** Demand reports sent: session, gate, demand. */
    final List<long[]> demands = new ArrayList<>();
    /** The stream keys the demand reports and deregistrations carried, in order. */
    final List<String> keys = new ArrayList<>();
    final List<URI> opened = new ArrayList<>();

    @Override
    public Cancellable open(URI stream, long sessionId, Listener l) {
      opened.add(stream);
      listener = l;
      handle = () -> cancelled = true;
      return handle;
    }

    @Override
    public void deregister(URI server, long sessionId, String streamKey) {
      deregistered.add(sessionId);
      keys.add("deregister " + streamKey);
    }

    @Override
    public void demand(URI stream, long sessionId, String streamKey, int gate, int demand) {
      demands.add(new long[] {sessionId, gate, demand});
      keys.add("demand " + streamKey);
    }
  }

  @BeforeEach
  void open() {
    session = new SpillwayHttpSession(SERVER, Spillway.forSloNanos(SLO_MS * 1_000_000),
        SLO_MS * 1_000_000, ticker, scheduler, streams);
  }

  private static Map<String, String> headers(SpillwayHttpSession.Ticket t) {
    Map<String, String> h = new HashMap<>();
    t.writeHeaders(h::put);
    return h;
  }

  private void answer(SpillwayHttpSession.Ticket t, int creditDelta) {
    Map<String, String> h = Map.of(SpillwayHttpHeaders.STATUS, "0",
        SpillwayHttpHeaders.CREDIT_DELTA, Integer.toString(creditDelta));
    session.onAnswer(t, 200, h::get);
  }

  private void runTimers() {
    List<Runnable> due = new ArrayList<>(timers);
    timers.clear();
    due.forEach(Runnable::run);
  }

  /**
   * A server under a context path has no stream at the origin's path, and names where it is on
   * its answers: the session looks there next, as a new session, and nowhere off the origin.
   */
  @Test
  void aSessionThatFoundNoStreamLooksWhereTheServersAnswersSay() {
    SpillwayHttpSession.Ticket a = session.offer("/ctx/x");
    assertThat(streams.opened).containsExactly(URI.create("http://svc:8080/spillway/credits"));
    streams.listener.closed(true, "HTTP 404");
    assertThat(a.released()).isCompleted();
    assertThat(session.isPassThrough()).isTrue();
    Map<String, String> offOrigin = Map.of(SpillwayHttpHeaders.CREDITS,
        "//elsewhere:8080/spillway/credits");
    session.onAnswer(a, 200, offOrigin::get);
    assertThat(session.isPassThrough()).isTrue();

    SpillwayHttpSession.Ticket b = session.offer("/ctx/x");
    assertThat(b.released()).isCompleted();
    long before = session.sessionId();
    Map<String, String> named = Map.of(SpillwayHttpHeaders.CREDITS, "/ctx/spillway/credits");
    session.onAnswer(b, 200, named::get);
    assertThat(session.isPassThrough()).isFalse();
    assertThat(session.sessionId()).isNotEqualTo(before);

    SpillwayHttpSession.Ticket c = session.offer("/ctx/x");
    assertThat(streams.opened).last().isEqualTo(URI.create("http://svc:8080/ctx/spillway/credits"));
    assertThat(c.released()).isNotDone(); // held until the stream answers, as a first request is
    streams.listener.opened(null, null);
    assertThat(c.released()).isCompleted();
    assertThat(headers(c)).containsEntry(SpillwayHttpHeaders.SESSION,
        Long.toString(session.sessionId()));
    answer(c, 0);
    session.close();
    assertThat(streams.deregistered).containsExactly(session.sessionId());
  }

  /**
   * The routes a server under a context path sends are its paths within the context: a request's
   * path is routed without the context's prefix, which the stream's path shows.
   */
  @Test
  void underAContextPathRequestsAreRoutedByTheirPathWithinIt() {
    SpillwayHttpSession.Ticket a = session.offer("/ctx/items/1");
    streams.listener.closed(true, "HTTP 404");
    Map<String, String> named = Map.of(SpillwayHttpHeaders.CREDITS, "/ctx/spillway/credits");
    session.onAnswer(a, 200, named::get);

    SpillwayHttpSession.Ticket items = session.offer("/ctx/items/1");
    SpillwayHttpSession.Ticket report = session.offer("/ctx/slow/report");
    streams.listener.opened("- /actuator/**, 1 /slow/**, 0 /**", null);
    assertThat(items.released()).isCompleted();
    assertThat(report.released()).isCompleted();
    answer(items, -1);
    answer(report, -1);
    SpillwayHttpSession.Ticket moreReport = session.offer("/ctx/slow/report");
    SpillwayHttpSession.Ticket moreItems = session.offer("/ctx/items/2");
    streams.listener.credit(1, 1); // gate 1's credit releases what gate 1 decides on
    assertThat(moreReport.released()).isCompleted();
    assertThat(moreItems.released()).isNotDone();
    SpillwayHttpSession.Ticket health = session.offer("/ctx/actuator/health");
    assertThat(health.released()).isCompleted();
    assertThat(headers(health)).isEmpty();
  }

  /** A server that has no stream where it says either is asked there once. */
  @Test
  void aNamedPathWithNoStreamEitherIsTriedOnce() {
    SpillwayHttpSession.Ticket a = session.offer("/ctx/x");
    streams.listener.closed(true, "HTTP 404");
    Map<String, String> named = Map.of(SpillwayHttpHeaders.CREDITS, "/ctx/spillway/credits");
    session.onAnswer(a, 200, named::get);
    SpillwayHttpSession.Ticket b = session.offer("/ctx/x");
    streams.listener.closed(true, "HTTP 404");
    assertThat(b.released()).isCompleted();
    session.onAnswer(b, 200, named::get);
    SpillwayHttpSession.Ticket c = session.offer("/ctx/x");
    assertThat(c.released()).isCompleted();
    assertThat(session.isPassThrough()).isTrue();
    assertThat(streams.opened).hasSize(2);
  }

  @Test
  void aDrainedSessionWaitsForTheServersCreditAndGoesWhenItsStreamBringsOne() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    SpillwayHttpSession.Ticket b = session.offer("/x");
    // held until the server has answered the stream: a credit must have a way in first
    assertThat(streams.listener).isNotNull();
    assertThat(a.released()).isNotDone();
    streams.listener.opened(null, null);
    assertThat(a.released()).isCompleted(); // the first request registers with its own credit
    assertThat(b.released()).isNotDone();
    Map<String, String> sent = headers(a);
    assertThat(sent).containsEntry(SpillwayHttpHeaders.SESSION,
        Long.toString(session.sessionId()));
    assertThat(sent).containsEntry(SpillwayHttpHeaders.DEMAND, "1");
    assertThat(sent).containsKey(SpillwayHttpHeaders.FLAGS); // the register flag

    answer(a, -1); // the server takes the credit back: the session is drained
    assertThat(b.released()).isNotDone();
    streams.listener.credit(0, 1); // an explicit credit, with nothing in flight to carry it
    assertThat(b.released()).isCompleted();
    assertThat(headers(b)).doesNotContainKey(SpillwayHttpHeaders.FLAGS);
  }

  /** A stamp of the server's record 5 of the session, its {@code n}th message. */
  private static long stamp(int n) {
    return 5L << 32 | n;
  }

  private void answerStamped(SpillwayHttpSession.Ticket t, int delta, String window) {
    Map<String, String> h = Map.of(SpillwayHttpHeaders.STATUS, "0",
        SpillwayHttpHeaders.CREDIT_DELTA, Integer.toString(delta),
        SpillwayHttpHeaders.CREDIT_WINDOW, window);
    session.onAnswer(t, 200, h::get);
  }

  /** Offers {@code n} requests to {@code /x}. */
  private List<SpillwayHttpSession.Ticket> offer(int n) {
    List<SpillwayHttpSession.Ticket> offered = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      offered.add(session.offer("/x"));
    }
    return offered;
  }

  private static long released(List<SpillwayHttpSession.Ticket> tickets) {
    return tickets.stream().filter(t -> t.released().isDone()).count();
  }

  /**
   * An answer's {@code Spillway-Credit-Window} is the server's window itself: the gate takes it
   * over its own count, whatever the delta beside it says (ResponseMetadata's class comment).
   */
  @Test
  void aStampedAnswerSetsTheWindowItNames() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null);
    List<SpillwayHttpSession.Ticket> more = offer(4);
    answerStamped(a, 3, "2/" + stamp(1)); // a count of deltas would make it 4
    assertThat(released(more)).isEqualTo(2);
  }

  /** A malformed window is ignored, as a malformed delta is: the answer counts as a delta. */
  @Test
  void aMalformedWindowLeavesTheDeltaAlone() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null);
    List<SpillwayHttpSession.Ticket> more = offer(4);
    answerStamped(a, 2, "2/0"); // stamp 0 means none
    assertThat(released(more)).isEqualTo(3);
  }

  /**
   * A request whose answer was never read (here, its call failed after it was sent) may have
   * brought a change of the window the gate never sees: the window is in doubt. Once the session
   * then lets nothing go and has nothing in flight to bring a message, it sends the server one
   * demand report, on which the server restates the window on the stream; the restatement lets
   * the waiting request go. Without it a count that drifted to nothing waits for an explicit
   * credit a server holding the window open never sends (breakwater-osdi20 §3.3).
   */
  @Test
  void aStalledSessionWhoseWindowIsInDoubtAsksTheServerToRestateIt() {
    stallsInDoubtThenGoesOnTheRestatement(t -> session.onFailure(t));
  }

  /**
   * An answer without Spillway's fields from a server that sent them before (a gateway's own,
   * or the server's with its headers lost) is an answer not read, as a failed call is.
   */
  @Test
  void anAnswerWithoutTheFieldsLeavesTheWindowInDoubtToo() {
    stallsInDoubtThenGoesOnTheRestatement(t -> session.onAnswer(t, 504, name -> null));
  }

  private void stallsInDoubtThenGoesOnTheRestatement(
      java.util.function.Consumer<SpillwayHttpSession.Ticket> unread) {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, "k1");
    List<SpillwayHttpSession.Ticket> more = offer(3);
    answer(a, 1); // window 2: two go, one waits
    assertThat(released(more)).isEqualTo(2);
    answer(more.get(0), -2); // window 0, one still in flight
    assertThat(streams.demands).isEmpty();
    unread.accept(more.get(1)); // its answer, whatever it said, is not read
    assertThat(streams.demands).singleElement().satisfies(d -> assertThat(d)
        .containsExactly(session.sessionId(), 0, 1));
    // with its stream's key: the server takes it only from the stream's owner
    assertThat(streams.keys).containsExactly("demand k1");
    assertThat(more.get(2).released()).isNotDone();
    SpillwayHttpSession.Ticket later = session.offer("/x");
    assertThat(streams.demands).as("asked once until a message comes").hasSize(1);
    streams.listener.credit(0, 0, 1, stamp(9)); // the server's window, restated
    assertThat(more.get(2).released()).isCompleted();
    assertThat(later.released()).isNotDone();
  }

  /**
   * A server whose endpoints have gates of their own keeps a ledger per gate: each gate's credits
   * release only the requests it decides on, and a path no gate with credits decides on goes at
   * once without the session's fields.
   */
  @Test
  void eachServerGateHasAWindowOfItsOwn() {
    SpillwayHttpSession.Ticket items = session.offer("/items/1");
    SpillwayHttpSession.Ticket report = session.offer("/slow/report");
    streams.listener.opened("- /actuator/**, 1 /slow/**, 0 /**", null);
    // each gate's first request registers with that gate, on its own credit
    assertThat(items.released()).isCompleted();
    assertThat(report.released()).isCompleted();
    answer(items, -1); // gate 0 takes its credit back
    answer(report, -1); // and so does gate 1
    SpillwayHttpSession.Ticket moreItems = session.offer("/items/2");
    SpillwayHttpSession.Ticket moreReport = session.offer("/slow/report");
    streams.listener.credit(1, 1); // a credit of gate 1 releases only what gate 1 decides on
    assertThat(moreReport.released()).isCompleted();
    assertThat(moreItems.released()).isNotDone();
    streams.listener.credit(0, 1);
    assertThat(moreItems.released()).isCompleted();
    assertThat(headers(moreReport)).containsEntry(SpillwayHttpHeaders.SESSION,
        Long.toString(session.sessionId()));

    // no gate counts the Actuator's paths: at once, nothing of Spillway's, and its answer (which
    // has no fields either) is no sign that the server is not Spillway's
    SpillwayHttpSession.Ticket health = session.offer("/actuator/health");
    assertThat(health.released()).isCompleted();
    assertThat(headers(health)).isEmpty();
    session.onAnswer(health, 200, name -> null);
    assertThat(session.isPassThrough()).isFalse();
    assertThat(session.queued()).isZero();
  }

  @Test
  void malformedRoutesLeaveEveryPathToTheDefaultGate() {
    SpillwayHttpSession.Ticket a = session.offer("/slow/report");
    streams.listener.opened("1 /slow/**, 999 /**", null);
    assertThat(a.released()).isCompleted();
    answer(a, -1);
    SpillwayHttpSession.Ticket b = session.offer("/slow/report");
    streams.listener.credit(1, 1); // no gate 1 here: ignored
    assertThat(b.released()).isNotDone();
    streams.listener.credit(0, 1);
    assertThat(b.released()).isCompleted();
  }

  /**
   * A route whose pattern the matcher cannot compile is a malformed header, as any other: the
   * requests held while the stream opened go, and later ones are not failed by it.
   */
  @Test
  void aRouteWhosePatternCannotBeCompiledLeavesEveryPathToTheDefaultGate() {
    SpillwayHttpSession.Ticket a = session.offer("/slow/report");
    streams.listener.opened("1 /slow/{id:[}, 0 /**", null);
    assertThat(a.released()).isCompleted();
    answer(a, 0);
    SpillwayHttpSession.Ticket b = session.offer("/slow/report");
    assertThat(b.released()).isCompleted(); // gate 0's credit, left by the first answer
    answer(b, 0);
    assertThat(session.queued()).isZero();
  }

  @Test
  void aRequestThatWaitsPastItsQueueTimeoutExpiresUnsent() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null);
    answer(a, -1);
    SpillwayHttpSession.Ticket b = session.offer("/x");
    assertThat(timers).hasSize(1);
    ticker.advanceMillis(SLO_MS); // past any timeout the SLO allows
    runTimers();
    assertThatThrownBy(() -> b.released().get()).isInstanceOf(ExecutionException.class)
        .cause().isInstanceOfSatisfying(SpillwayRejectedException.class,
            e -> assertThat(e.status()).isEqualTo(Status.EXPIRED));
    assertThat(session.queued()).isZero();
  }

  @Test
  void aServerWithoutACreditStreamGetsRequestsAtOnce() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    SpillwayHttpSession.Ticket b = session.offer("/x");
    streams.listener.closed(true, "HTTP 404");
    assertThat(session.isPassThrough()).isTrue();
    assertThat(a.released()).isCompleted();
    assertThat(b.released()).isCompleted();
    assertThat(headers(a)).isEmpty(); // nothing of Spillway's on the wire
    assertThat(session.offer("/x").released()).isCompleted();
    session.close();
    assertThat(streams.deregistered).isEmpty();
  }

  @Test
  void aFirstAnswerWithoutSpillwayStatusMakesASessionAPassThroughForGood() {
    SpillwayHttpSession plain = new SpillwayHttpSession(SERVER, NoControl.INSTANCE,
        SLO_MS * 1_000_000, ticker, scheduler, streams); // a scheme without credits: no stream
    SpillwayHttpSession.Ticket a = plain.offer("/x");
    assertThat(a.released()).isCompleted();
    plain.onAnswer(a, 200, name -> null);
    assertThat(plain.isPassThrough()).isTrue();
    ticker.advanceMillis(60_000);
    SpillwayHttpSession.Ticket b = plain.offer("/x");
    assertThat(b.released()).isCompleted();
    assertThat(headers(b)).isEmpty(); // nothing of Spillway's on the wire
    assertThat(streams.listener).isNull();
  }

  @Test
  void anAnswerWithoutFieldsFromASpillwayServerIsAFailureNotAPassThrough() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null); // the server has a credit stream: it is Spillway's
    SpillwayHttpSession.Ticket b = session.offer("/x");
    session.onAnswer(a, 500, name -> null); // an error page that lost the headers
    assertThat(session.isPassThrough()).isFalse();
    assertThat(b.released()).isCompleted(); // a's credit came back with its failure
    assertThat(headers(b)).containsKey(SpillwayHttpHeaders.SESSION);
  }

  @Test
  void aStreamThatEndsStartsTheSessionAgainUnderANewId() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    Cancellable first = streams.handle;
    long firstId = session.sessionId();
    streams.listener.opened(null, null);
    SpillwayHttpSession.Ticket b = session.offer("/x"); // queued: a holds the one credit
    // the server ended the stream, and deregistered the session with it (or restarted)
    streams.listener.closed(false, "connection reset");
    assertThat(session.isPassThrough()).isFalse();
    assertThat(session.sessionId()).isNotEqualTo(firstId);
    assertThat(streams.handle).isNotSameAs(first); // a new stream, opened at once for b
    assertThat(b.released()).isNotDone(); // held until the new stream is answered
    streams.listener.opened(null, null);
    assertThat(b.released()).isCompleted();
    assertThat(headers(b)).containsEntry(SpillwayHttpHeaders.SESSION,
        Long.toString(session.sessionId())).containsKey(SpillwayHttpHeaders.FLAGS); // registers
    answer(a, 5); // the old session's answer brings the new one nothing
    assertThat(session.offer("/x").released()).isNotDone(); // b holds the new session's credit
  }

  /**
   * A server (or a proxy before it) that answers every stream and ends it at once: the session
   * starts again once, as for a restarted server, but a stream that ends again that soon is not
   * reopened at once for ever, each time as a new session on a new connection to a server that
   * may be overloaded. The session passes requests through for a while, as when a stream cannot
   * be opened, then tries again.
   */
  @Test
  void aStreamThatEndsAgainAsSoonAsItOpensIsNotReopenedAtOnceForEver() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null);
    assertThat(a.released()).isCompleted();
    int opens = streams.opened.size();
    for (int i = 0; i < 5; i++) {
      streams.listener.closed(false, "end of stream");
      if (streams.opened.size() > opens) {
        opens = streams.opened.size();
        streams.listener.opened(null, null); // answered, and ended again at once
      }
    }
    assertThat(streams.opened).as("streams opened within one instant").hasSizeLessThanOrEqualTo(2);
    assertThat(session.isPassThrough()).isTrue();
    assertThat(session.offer("/x").released()).isCompleted(); // requests go meanwhile
    ticker.advanceMillis(30_000);
    SpillwayHttpSession.Ticket b = session.offer("/x");
    assertThat(streams.opened).as("tried again later").hasSize(opens + 1);
    streams.listener.opened(null, null);
    assertThat(b.released()).isCompleted();
    assertThat(headers(b)).containsKey(SpillwayHttpHeaders.SESSION);
  }

  @Test
  void aStreamThatCannotBeOpenedSendsAtOnceForAWhileThenTriesAgain() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    Cancellable first = streams.handle;
    streams.listener.closed(false, "connection refused"); // never answered
    assertThat(a.released()).isCompleted();
    assertThat(headers(a)).isEmpty(); // sent as a plain client's, not waiting for a stream
    assertThat(session.offer("/x").released()).isCompleted();
    assertThat(streams.handle).isSameAs(first);
    ticker.advanceMillis(30_000);
    SpillwayHttpSession.Ticket b = session.offer("/x");
    assertThat(streams.handle).isNotSameAs(first); // tried again, as a new session
    assertThat(b.released()).isNotDone();
    streams.listener.opened(null, null);
    assertThat(b.released()).isCompleted();
    assertThat(headers(b)).containsKey(SpillwayHttpHeaders.SESSION);
    session.onAnswer(a, 200, name -> null); // sent passing through: no credit, no verdict
    assertThat(session.isPassThrough()).isFalse();
  }

  @Test
  void anAbandonedRequestIsNeverSentAndGivesItsCreditToTheNext() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null);
    answer(a, -1);
    SpillwayHttpSession.Ticket b = session.offer("/x");
    session.abandon(b);
    assertThat(b.released()).isCancelled();
    assertThat(session.queued()).isZero(); // withdrawn at once
    streams.listener.credit(0, 1); // the credit b would have taken waits for the next
    SpillwayHttpSession.Ticket c = session.offer("/x");
    assertThat(c.released()).isCompleted();
    session.abandon(c); // released, then the caller failed to send it: its credit comes back
    SpillwayHttpSession.Ticket d = session.offer("/x");
    assertThat(d.released()).isCompleted();
  }

  /**
   * A queued request whose caller gave up leaves the queue at once: the session no longer counts
   * it as queued, and the demand the next request carries to the server (the requests waiting
   * behind it) leaves it out.
   */
  @Test
  void anAbandonedQueuedRequestLeavesTheQueueAndTheDemandAtOnce() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null);
    assertThat(a.released()).isCompleted(); // a registers, and holds the one credit
    SpillwayHttpSession.Ticket b = session.offer("/x");
    SpillwayHttpSession.Ticket c = session.offer("/x");
    SpillwayHttpSession.Ticket d = session.offer("/x");
    assertThat(session.queued()).isEqualTo(3);
    session.abandon(c);
    assertThat(c.released()).isCancelled();
    assertThat(session.queued()).isEqualTo(2);
    answer(a, 1); // a's credit back, and one more: b goes, with d behind it
    assertThat(b.released()).isCompleted();
    assertThat(headers(b)).containsEntry(SpillwayHttpHeaders.DEMAND, "1");
    assertThat(d.released()).isCompleted();
    assertThat(session.queued()).isZero();
  }

  @Test
  void closingFailsQueuedRequestsAndDeregisters() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, null);
    SpillwayHttpSession.Ticket b = session.offer("/x");
    session.close();
    assertThat(a.released()).isCompleted();
    assertThatThrownBy(() -> b.released().get()).cause()
        .isInstanceOfSatisfying(SpillwayRejectedException.class,
            e -> assertThat(e.status()).isEqualTo(Status.FAILED));
    assertThat(streams.cancelled).isTrue();
    assertThat(streams.deregistered).containsExactly(session.sessionId());
    assertThatThrownBy(() -> session.offer("/x").released().get()).cause()
        .isInstanceOf(SpillwayRejectedException.class);
  }

  /**
   * A session whose stream ended opens a new one at once under a new id; closed before any
   * request registers that id, it still deregisters it, since a servlet server notices a client
   * that went away only when it next writes, and writes nothing to a session it has no credits
   * for: without the {@code DELETE} the new stream would stay open there.
   */
  @Test
  void closingAfterTheStreamRestartedEndsTheNewStreamAtTheServer() {
    SpillwayHttpSession.Ticket a = session.offer("/x");
    streams.listener.opened(null, "k1");
    answer(a, 0);
    long firstId = session.sessionId();
    streams.listener.closed(false, "connection reset"); // the server restarted
    long renewed = session.sessionId();
    assertThat(renewed).isNotEqualTo(firstId);
    assertThat(streams.opened).hasSize(2); // the new stream, opened before any request
    streams.listener.opened(null, "k2");
    session.close();
    assertThat(streams.cancelled).isTrue();
    assertThat(streams.deregistered).containsExactly(renewed);
    assertThat(streams.keys).as("with the new stream's key").containsExactly("deregister k2");
  }

  /** A stream that is still opening when the session closes is deregistered as well. */
  @Test
  void closingWhileTheFirstStreamOpensEndsItAtTheServer() {
    SpillwayHttpSession.Ticket a = session.offer("/x"); // held: the stream is asked for
    session.close();
    assertThat(a.released()).isCompletedExceptionally();
    assertThat(streams.cancelled).isTrue();
    assertThat(streams.deregistered).containsExactly(session.sessionId());
  }

  /**
   * A session created while the sessions close (a request in flight as the application stops)
   * is closed with them: it must not open a credit stream that nothing will ever close.
   */
  @Test
  void aSessionCreatedAsTheSessionsCloseOpensNoStream() throws Exception {
    Thread[] closer = new Thread[1];
    SpillwayHttpSessions[] sessions = new SpillwayHttpSessions[1];
    sessions[0] = new SpillwayHttpSessions(SLO_MS * 1_000_000, slo -> {
      // close() runs now, and waits to clear the map for the session being created
      closer[0] = Thread.ofPlatform().start(sessions[0]::close);
      while (closer[0].isAlive() && closer[0].getState() != Thread.State.BLOCKED) {
        Thread.onSpinWait();
      }
      return Spillway.forSloNanos(slo);
    }, ticker, scheduler, streams);
    SpillwayHttpSession created = null;
    try {
      created = sessions[0].of(SERVER);
    } catch (IllegalStateException closed) {
      // refused: the sessions were closed
    }
    closer[0].join();
    if (created != null) {
      SpillwayHttpSession.Ticket t = created.offer("/x");
      assertThat(t.released()).isCompletedExceptionally();
    }
    assertThat(streams.opened).isEmpty();
  }

  /**
   * A host name with an underscore (a Docker Compose service, say) is legal to the HTTP clients
   * Spring uses but not to {@link URI#getHost()}: such a server gets a session of its own, and a
   * credit stream the JDK's client cannot open is a stream that could not be opened, never a
   * failed request or one held for good.
   */
  @Test
  void aServerWhoseHostHasAnUnderscoreGetsASessionOfItsOwnAndItsRequestsGo() {
    SpillwayHttpSessions sessions = new SpillwayHttpSessions(SLO_MS * 1_000_000,
        Spillway::forSloNanos, ticker, scheduler, SpillwayHttpSession.CreditStreams.jdk());
    try {
      SpillwayHttpSession orders = sessions.of(URI.create("http://orders_svc:8080/orders/1"));
      SpillwayHttpSession users = sessions.of(URI.create("http://users_svc:8080/users/1"));
      assertThat(orders).isNotSameAs(users);
      assertThat(orders.server()).isEqualTo(URI.create("http://orders_svc:8080"));
      SpillwayHttpSession.Ticket t = orders.offer("/orders/1");
      assertThat(t.released()).isCompleted();
      assertThat(orders.isPassThrough()).isTrue();
    } finally {
      sessions.close();
    }
  }

  /** Scheme and host are case-insensitive (RFC 3986 §6.2.2.1): one server, one session. */
  @Test
  void aServerNamedInAnotherCaseIsTheSameSession() {
    SpillwayHttpSessions sessions = new SpillwayHttpSessions(SLO_MS * 1_000_000,
        Spillway::forSloNanos, ticker, scheduler, SpillwayHttpSession.CreditStreams.jdk());
    try {
      SpillwayHttpSession lower = sessions.of(URI.create("http://orders:8080/orders/1"));
      assertThat(sessions.of(URI.create("HTTP://Orders:8080/orders/2"))).isSameAs(lower);
      assertThat(sessions.of(URI.create("http://ORDERS_SVC/x")))
          .isSameAs(sessions.of(URI.create("http://orders_svc:80/y")));
      assertThat(sessions.sessions()).hasSize(2);
    } finally {
      sessions.close();
    }
  }
}
