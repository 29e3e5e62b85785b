package io.spillway.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.collection.LongObjectHashMap;
import io.spillway.api.ExecutorBacklogProbe;
import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.transport.internal.Frame;
import io.spillway.transport.internal.FrameException;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;

/**
 * One connection's server pipeline stage (docs/design.md, "A request's path on a server"):
 * decode a frame's header, decide on it at once (AQM and credits, before any work on the payload),
 * answer a rejected request with a header-only reject, dispatch an admitted one to the dispatcher,
 * and write its response with the credits piggybacked, flushing once per batch of responses.
 *
 * <p>A request is decided on as soon as its {@value Frame#HEADER_SIZE}-byte header has arrived and
 * passed {@link Frame#validate}, however little of its payload has: the design drops "as early as
 * possible: AQM drops right after the header is decoded, before any allocation for the payload"
 * (docs/design.md, "A request's path on a server"). A drop costs the server whatever it spent on
 * the request's bytes, and its client learns of it only when the reject goes out
 * (breakwater-osdi20 §2.1, objectives 4, "low drop rate", and 5, "fast feedback"; the drop itself
 * is §3.2.3's delay-based AQM).
 * Deciding once the whole frame had arrived would make a refused request of up to {@link
 * SpillwayServer.Builder#maxPayload} bytes (1 MiB by default) wait for its payload's transfer
 * before its reject is sent, with all of that payload gathered in the decoder's buffer meanwhile.
 * So a refused request is answered at once, and its payload is skipped as it arrives, none of it
 * kept; the next frame is decoded only after the last of it. An admitted request's payload is
 * gathered until it is whole, and the request is then dispatched with it. Its wait in the server
 * counts from then: the run queue's stamp and its queueing budget start when it can first run,
 * since the payload's transfer is network time, which its budget already leaves out (Protego
 * §3.2: target − service − network).
 *
 * <p>An admitted request holds its permit while its payload is on its way: it is in the server,
 * and a client that sends a header and stalls the rest keeps that permit. What bounds it: one such
 * request per connection, since nothing after it is decoded until it is whole; at most {@link
 * SpillwayServer.Builder#maxPayload} bytes held for it; under a credit scheme the credit is the
 * session's own (Breakwater §3.2: a client sends only with a credit in hand), so a stall costs only
 * its own window, while under a concurrency limit it takes one slot, counted as waiting to run
 * ({@link ServerPermit#started} is called when it runs). The timers of a credit hold do not reach
 * it (a hold or a write pause starts only between frames, a hold only after a refusal, whose
 * payload is skipped, not awaited); its own timer does: a payload not whole {@link
 * SpillwayServer.Builder#payloadTimeoutNanos} after its header closes the connection, as servlet
 * containers close a connection whose request body stalls past their connection timeout. Closing,
 * rather than answering the request and skipping the rest, makes a client that stalls on purpose
 * pay a new connection for every permit it holds so. A connection that closes, or this handler
 * taken off it, ends the request as {@link Outcome#FAILED}, unrun and unanswered.
 *
 * <p>The same timeout bounds a header: a read that leaves part of one buffered gives the
 * connection {@link SpillwayServer.Builder#payloadTimeoutNanos} from then to complete it, or it
 * is closed, as servlet containers close a connection whose request headers stall. Nothing was
 * decided on such a header, so there is no permit to end; but without the timeout a client could
 * hold its connection and the buffer under its bytes for as long as it liked by trickling headers
 * (the slow-loris attack). A connection with no part of a frame read is idle between requests,
 * not stalled, and has no timer: only a read that leaves a frame incomplete sets one, and a frame
 * read whole, the common case, schedules nothing. A timeout that passes while this handler has
 * stopped reading the connection (a hold or a pause, below) is set again instead of closing it:
 * that wait is the server's, not the client's.
 *
 * <p>Every request the gate decides on gets exactly one answer: a reject, a response, or, if the
 * handler fails, a failure; its permit is completed exactly once even if the connection is gone by
 * then. When the connection closes, its sessions are deregistered and their credits return.
 *
 * <p>A session belongs to the first connection that sends on it while no other holds it: that
 * connection receives its explicit credits and ends it, by a deregister frame or by closing.
 * Another connection sending on the same session id shares its window but can neither end it nor
 * draw its credit frames away, so a connection cannot take another's session by naming it; it
 * takes the session over only once the owner has let it go.
 *
 * <p>A request refused for want of credit ({@link Status#REJECTED_NO_CREDIT}) stops the reading
 * of its connection until the connection is next answered or credited. The gate refuses so only
 * a session with its whole window in the server (Breakwater §3.2: a client sends only with a
 * credit in hand), and nothing can open that window before one of the requests it holds is
 * answered or the control loop sends credit; what the session sends in between could only be
 * refused too, and on sockets each such refusal costs the server's core several microseconds of
 * reading, deciding and writing (docs/results/reliability.md). Held, the unread frames stay in
 * the kernel's buffers and TCP's window pushes back on the sender. A client that keeps to its
 * window is refused for credit only when it cancels a call already on its way (the gate keeps a
 * revoked window as the limit until the client has read the revocation), and is then held for at
 * most the time to its connection's next answer. A request of a session the connection may not
 * add is held the same way, whether this handler refuses it (its cap of sessions) or the gate does
 * (a credit gate bounds the sessions one connection has on probation: Breakwater's server gate,
 * "Newcomers").
 *
 * <p>A connection with nothing owed has no answer to wait for: its session's window is empty and
 * only a credit frame (§3.2.1, sent to drained sessions that report demand) can open it. Its hold
 * ends with that frame or after a timeout that starts at {@value #FIRST_IDLE_HOLD_NANOS} ns and
 * doubles with each such hold in a row, up to {@value #MAX_IDLE_HOLD_NANOS} ns, as TCP backs off
 * its retransmissions (RFC 6298 §5.5); an answer or a credit starts it again from the first. A
 * client caught once by a race loses tens of microseconds; one that keeps sending without credit
 * costs the server at most one refusal per {@value #MAX_IDLE_HOLD_NANOS} ns once backed off.
 *
 * <p>Confined to the channel's event loop, except {@link Dispatch#run()} which runs on the
 * dispatcher and hands back to the loop.
 */
final class ServerFrameHandler extends ByteToMessageDecoder {

  private static final System.Logger LOG = System.getLogger(ServerFrameHandler.class.getName());
  /** A session of this connection bound to it in the server ({@link SpillwayServer#bind}). */
  private static final Object OWNED = Boolean.TRUE;
  /** A session this connection sends on while another connection owns it (see the class comment). */
  private static final Object SHARED = Boolean.FALSE;

  private final SpillwayServer server;
  private final RequestMetadata header = new RequestMetadata();
  /** This connection, as the gate knows it ({@link RequestMetadata#origin}). */
  private final long origin;
  private final LongObjectHashMap<Object> sessions = new LongObjectHashMap<>();
  private ChannelHandlerContext ctx;
  private ExecutorBacklogProbe probe;
  private LoopQueue loopQueue;
  private ThreadingSwitch.Loop threading;
  private boolean flushScheduled;
  /** Closed after an error, which has been reported. */
  private boolean closing;
  /** Decoding and reading stopped until the peer drains its responses. */
  private boolean paused;
  /** Decoding and reading stopped after a refusal for want of credit, until an answer or a credit. */
  private boolean heldForCredit;
  /** Requests of this connection admitted and not yet answered. */
  private int answersOwed;
  /** Holds in a row with nothing owed, each ended by its timeout (see the class comment). */
  private int idleHolds;
  /** Counts holds, so a timeout ends only the hold it was set for. */
  private long holdCount;
  /** Bytes still to come of the payload of a request refused at its header, skipped as they arrive. */
  private int discarding;
  /**
   * The request admitted at its header whose payload has not all arrived, or {@code null}; with
   * what it is dispatched with once the payload is whole. At most one: no later frame is decoded
   * before its payload is whole. Never with a hold or a pause: both start only between frames.
   */
  private ServerPermit awaiting;
  private long awaitingSession;
  private long awaitingRequest;
  private long awaitingBudget;
  private int awaitingLength;
  /**
   * Closes the connection if the frame begun and not yet whole is not whole in time: {@link
   * #awaiting}'s payload, or else the header partly read; see the class comment.
   */
  private java.util.concurrent.ScheduledFuture<?> frameTimeout;
  private final Runnable frameTimedOut = this::frameTimedOut;
  static final long FIRST_IDLE_HOLD_NANOS = 50_000;
  static final long MAX_IDLE_HOLD_NANOS = 10_000_000;
  private final Runnable flush = this::flushNow;
  private final Runnable decodeAfterHold = this::decodeAfterHold;

  ServerFrameHandler(SpillwayServer server) {
    this.server = server;
    this.origin = server.nextOrigin();
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
    if (paused && ctx.channel().isWritable()) {
      paused = false;
      server.pausedConnections.decrementAndGet();
      if (!heldForCredit) {
        ctx.channel().config().setAutoRead(true);
        channelRead(ctx, Unpooled.EMPTY_BUFFER); // decode the frames read before the pause
      }
    }
    super.channelWritabilityChanged(ctx);
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
    if (paused || heldForCredit) {
      // not super's: with auto-read off and no message decoded it would ask for another read
      ctx.fireChannelReadComplete();
      return;
    }
    super.channelReadComplete(ctx);
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    this.ctx = ctx;
    this.probe = server.probeFor(ctx.channel().eventLoop());
    this.loopQueue = server.queueFor(ctx.channel().eventLoop());
    this.threading = server.threadingFor(ctx.channel().eventLoop());
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    if (!ctx.channel().isActive()) {
      // The decoder decodes what it holds once more as the channel goes inactive, after this
      // handler has ended its hold and pause, its request awaiting a payload and its sessions: no
      // answer can reach the client now, so the frames still undecided go, undecided, with the
      // decoder's buffer.
      return;
    }
    if (!finishFrame(in)) {
      return;
    }
    while (in.readableBytes() >= Frame.HEADER_SIZE) {
      cancelFrameTimeout(); // a header begun in an earlier read is whole
      if (heldForCredit) {
        return;
      }
      if (!ctx.channel().isWritable()) {
        // A client that sends and does not read: stop decoding and reading until it drains its
        // responses, so what the server holds for it stays bounded by the write-buffer water
        // marks and the requests already admitted, instead of growing with what it sends.
        if (!paused) {
          server.pausedConnections.incrementAndGet();
        }
        paused = true;
        ctx.channel().config().setAutoRead(false);
        return;
      }
      int type = Frame.validate(in, server.maxPayload());
      int length = (int) Frame.payloadLength(in);
      if (type == Frame.TYPE_REQUEST) {
        onRequest(in, length);
        if (!finishFrame(in)) {
          return;
        }
        continue;
      }
      if (!Frame.isWhole(in, length)) {
        return;
      }
      switch (type) {
        case Frame.TYPE_DEMAND -> {
          Frame.readRequest(in, header);
          in.skipBytes(Frame.HEADER_SIZE);
          if (track(header.sessionId())) {
            server.gate().onDemand(header.sessionId(), header.demand(), server.ticker().read());
          }
        }
        case Frame.TYPE_DEREGISTER -> {
          Frame.readRequest(in, header);
          in.skipBytes(Frame.HEADER_SIZE);
          long session = header.sessionId();
          // Only the connection a session's frames came on may end it: any other could otherwise
          // return a stranger's credits to the pool and strand its queued calls.
          if (sessions.remove(session) == OWNED) {
            server.unbind(session, ctx.channel());
            server.gate().deregister(session, server.ticker().read());
          }
        }
        default -> throw new FrameException("a client may not send frames of type " + type);
      }
    }
    if (in.isReadable() && frameTimeout == null) {
      armFrameTimeout(); // part of a header, its timer set at the read that left it so
    }
  }

  /**
   * Decides on the request whose header is at the reader index, however much of its payload has
   * arrived, and consumes the header: a refused request's payload is then skipped ({@link
   * #discarding}), an admitted one's awaited ({@link #awaiting}) and taken by {@link #finishFrame}.
   */
  private void onRequest(ByteBuf in, int length) {
    Frame.readRequest(in, header).origin(origin);
    in.skipBytes(Frame.HEADER_SIZE);
    long now = server.ticker().read();
    if (probe != null) {
      // The first frame of a batch stamps the loop's backlog probe with the reading the request
      // needs anyway; the probe waits behind the batch's I/O, so while it does the loop is held.
      probe.arrived(now);
    }
    if (!track(header.sessionId())) {
      discarding = length;
      refuseUnregistered(header.sessionId(), header.requestId());
      return;
    }
    ServerPermit permit = server.gate().admit(header, now);
    long sessionId = header.sessionId();
    long requestId = header.requestId();
    if (!permit.isAdmitted()) {
      discarding = length; // dropped before any of the payload is kept
      respond(permit, Outcome.DROPPED, sessionId, requestId, Unpooled.EMPTY_BUFFER, now);
      return;
    }
    answersOwed++;
    if (server.outlastsBudget(header.budgetNanos(), now)) {
      discarding = length; // Protego §3.2 at the run queue: it would wait past its budget
      respond(permit, Outcome.ABORTED, sessionId, requestId, Unpooled.EMPTY_BUFFER, now);
      return;
    }
    if (in.readableBytes() >= length) {
      dispatch(permit, sessionId, requestId, header.budgetNanos(), in.readRetainedSlice(length), now);
      return;
    }
    awaiting = permit;
    awaitingSession = sessionId;
    awaitingRequest = requestId;
    awaitingBudget = header.budgetNanos();
    awaitingLength = length;
    armFrameTimeout();
  }

  private void armFrameTimeout() {
    frameTimeout = ctx.executor().schedule(frameTimedOut, server.payloadTimeoutNanos(),
        java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  /**
   * The frame begun was not whole in time: the connection closes, which ends {@link #awaiting} if
   * it was the payload that stalled. Set again instead while this handler is not reading.
   */
  private void frameTimedOut() {
    frameTimeout = null;
    int held = actualReadableBytes();
    boolean headerBegun = discarding == 0 && held > 0 && held < Frame.HEADER_SIZE;
    if (closing || !ctx.channel().isActive() || (awaiting == null && !headerBegun)) {
      return;
    }
    if (heldForCredit || paused) {
      armFrameTimeout(); // the server stopped reading: not the client's stall
      return;
    }
    closing = true;
    long millis = server.payloadTimeoutNanos() / 1_000_000;
    if (awaiting != null) {
      LOG.log(Level.WARNING, "closing {0}: {1} bytes of a request''s payload of {2} not received {3} ms after"
          + " its header (SpillwayServer.Builder.payloadTimeoutNanos)", ctx.channel().remoteAddress(),
          awaitingLength - held, awaitingLength, millis);
    } else {
      LOG.log(Level.WARNING, "closing {0}: {1} bytes of a frame''s header of {2} not received {3} ms after"
          + " its first (SpillwayServer.Builder.payloadTimeoutNanos)", ctx.channel().remoteAddress(),
          Frame.HEADER_SIZE - held, Frame.HEADER_SIZE, millis);
    }
    ctx.close(); // channelInactive ends the request awaited, FAILED, and releases what is held
  }

  private void cancelFrameTimeout() {
    if (frameTimeout != null) {
      frameTimeout.cancel(false);
      frameTimeout = null;
    }
  }

  /**
   * Consumes what {@code in} holds of the frame decided at its header and not yet whole: skips
   * what has come of a refused request's payload; dispatches the request {@link #awaiting} its
   * payload once the payload is whole. Whether that frame is done, so the next may be decoded.
   */
  private boolean finishFrame(ByteBuf in) {
    if (discarding > 0) {
      int skipped = Math.min(discarding, in.readableBytes());
      in.skipBytes(skipped);
      discarding -= skipped;
      return discarding == 0;
    }
    if (awaiting == null) {
      return true;
    }
    if (in.readableBytes() < awaitingLength) {
      return false;
    }
    ServerPermit permit = awaiting;
    awaiting = null;
    cancelFrameTimeout();
    // A reading of its own: the request joins the run queue now, and a queue stamped with the
    // time its header came would count the payload's transfer as queueing delay. The loop starts
    // on a request here as it does at a header, so the backlog probe may take the reading too.
    long now = server.ticker().read();
    if (probe != null) {
      probe.arrived(now);
    }
    dispatch(permit, awaitingSession, awaitingRequest, awaitingBudget, in.readRetainedSlice(awaitingLength), now);
    return true;
  }

  /** Hands an admitted request, its payload whole, to where it runs; {@code now} starts its wait. */
  private void dispatch(ServerPermit permit, long sessionId, long requestId, long budgetNanos, ByteBuf payload,
      long now) {
    Dispatch task = new Dispatch(permit, sessionId, requestId, budgetNanos, payload, now);
    if (threading != null) {
      threading.arrived(now);
      threading.submit(task, now); // a request the workers refuse ends there (abandon)
      return;
    }
    if (loopQueue != null) {
      loopQueue.submit(task, now);
      return;
    }
    try {
      server.dispatcher().execute(task);
    } catch (RejectedExecutionException e) {
      payload.release();
      respond(permit, Outcome.FAILED, sessionId, requestId, Unpooled.EMPTY_BUFFER, now);
    }
  }

  /**
   * Ends the request {@link #awaiting} its payload, if there is one, as the connection closes or
   * this handler leaves it: the payload can no longer come, and its permit must still end once.
   */
  private void abandonAwaiting(long now) {
    ServerPermit permit = awaiting;
    if (permit == null) {
      return;
    }
    awaiting = null;
    cancelFrameTimeout();
    answersOwed--;
    // FAILED, as every request ended unrun ends here (Dispatch#abandon, a dispatcher that refuses
    // it). Not DROPPED, which tells the gate it turned the request away for load: a concurrency
    // limit samples it as a drop, Breakwater's gate as overload when it hands the credit on. A
    // client that goes away mid-request says nothing about load, and FAILED carries no load sample.
    permit.complete(Outcome.FAILED, now, new ResponseMetadata().sessionId(awaitingSession)
        .requestId(awaitingRequest));
  }

  /**
   * Records that this connection carries {@code sessionId}; false, recording nothing, if it is new
   * and the connection already carries {@link SpillwayServer.Builder#maxSessionsPerConnection}.
   */
  private boolean track(long sessionId) {
    Object held = sessions.get(sessionId);
    if (held == OWNED) {
      return true;
    }
    if (held == null && sessions.size() >= server.maxSessionsPerConnection()) {
      return false;
    }
    if (held == null || server.isUnbound(sessionId)) {
      sessions.put(sessionId, server.bind(sessionId, ctx.channel()) ? OWNED : SHARED);
    }
    return true;
  }

  /** Answers a request of a session this connection may not add, without reaching the gate. */
  private void refuseUnregistered(long sessionId, long requestId) {
    ResponseMetadata response = new ResponseMetadata().sessionId(sessionId).requestId(requestId)
        .status(Status.REJECTED_NO_CREDIT);
    ByteBuf head = ctx.alloc().buffer(Frame.HEADER_SIZE);
    Frame.writeResponse(head, Frame.TYPE_RESPONSE, response, 0);
    ctx.write(head, ctx.voidPromise());
    scheduleFlush();
    holdForCredit();
  }

  /**
   * Stops decoding and reading after a refusal for want of credit, until this connection's next
   * answer to an admitted request or credit frame, or, with no answer owed, the backed-off
   * timeout; see the class comment.
   */
  private void holdForCredit() {
    if (heldForCredit) {
      return;
    }
    heldForCredit = true;
    long hold = ++holdCount;
    server.heldConnections.incrementAndGet();
    ctx.channel().config().setAutoRead(false);
    if (answersOwed == 0) {
      long timeout = Math.min(MAX_IDLE_HOLD_NANOS, FIRST_IDLE_HOLD_NANOS << Math.min(idleHolds, 16));
      idleHolds++;
      ctx.executor().schedule(() -> {
        if (hold == holdCount) {
          releaseHold();
        }
      }, timeout, java.util.concurrent.TimeUnit.NANOSECONDS);
    }
  }

  /** Resumes what {@link #holdForCredit} stopped, decoding the frames already read on a later turn of the loop. */
  private void releaseHold() {
    if (heldForCredit) {
      heldForCredit = false;
      server.heldConnections.decrementAndGet();
      if (!paused) {
        ctx.channel().config().setAutoRead(true);
        // not from here: an answer can be written from inside decode (in-line threading)
        ctx.executor().execute(decodeAfterHold);
      }
    }
  }

  private void decodeAfterHold() {
    if (heldForCredit || paused || !ctx.channel().isActive()) {
      return;
    }
    try {
      channelRead(ctx, Unpooled.EMPTY_BUFFER);
    } catch (Exception e) {
      exceptionCaught(ctx, e);
    }
  }

  /** Completes the permit and writes the answer. On the event loop. */
  private void respond(ServerPermit permit, Outcome outcome, long sessionId, long requestId,
      ByteBuf payload, long now) {
    ResponseMetadata response = new ResponseMetadata().sessionId(sessionId).requestId(requestId);
    permit.complete(outcome, now, response);
    Channel ch = ctx.channel();
    if (!ch.isActive()) {
      ReferenceCountUtil.release(payload);
      return;
    }
    boolean refusedForCredit = response.status() == Status.REJECTED_NO_CREDIT;
    boolean admitted = outcome != Outcome.DROPPED; // its answer may open a window
    if (admitted) {
      answersOwed--;
    }
    ByteBuf head = ctx.alloc().buffer(Frame.HEADER_SIZE);
    Frame.writeResponse(head, Frame.TYPE_RESPONSE, response, payload.readableBytes());
    ctx.write(head, ctx.voidPromise());
    if (payload.isReadable()) {
      ctx.write(payload, ctx.voidPromise());
    } else {
      payload.release();
    }
    scheduleFlush();
    if (refusedForCredit) {
      holdForCredit();
    } else if (admitted) {
      windowMayHaveOpened();
    }
  }

  /**
   * Sends an explicit credit frame from any thread (the gate's control loop): the change, and the
   * window after it with its stamp where {@code seq} is not 0.
   */
  void sendCreditFromAnyThread(long sessionId, int delta, int window, long seq) {
    if (ctx.executor().inEventLoop()) {
      sendCredit(sessionId, delta, window, seq);
    } else {
      try {
        ctx.executor().execute(() -> sendCredit(sessionId, delta, window, seq));
      } catch (RejectedExecutionException shuttingDown) {
        // the connection is going away; its sessions are deregistered when it closes
      }
    }
  }

  /** Writes an explicit credit frame. On the event loop. */
  private void sendCredit(long sessionId, int delta, int window, long seq) {
    if (!ctx.channel().isActive()) {
      return;
    }
    ResponseMetadata m = new ResponseMetadata().sessionId(sessionId).credit(delta, window, seq);
    ByteBuf head = ctx.alloc().buffer(Frame.HEADER_SIZE);
    Frame.writeResponse(head, Frame.TYPE_CREDIT, m, 0);
    ctx.write(head, ctx.voidPromise());
    scheduleFlush();
    windowMayHaveOpened();
  }

  /** An answer to an admitted request or a credit went out: ends a hold and its back-off. */
  private void windowMayHaveOpened() {
    idleHolds = 0;
    releaseHold();
  }

  private void scheduleFlush() {
    if (!flushScheduled) {
      flushScheduled = true;
      ctx.executor().execute(flush); // runs after the loop's current batch: one flush for many writes
    }
  }

  private void flushNow() {
    flushScheduled = false;
    ctx.flush();
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    cancelFrameTimeout();
    if (heldForCredit) {
      heldForCredit = false;
      server.heldConnections.decrementAndGet();
    }
    if (paused) {
      paused = false;
      server.pausedConnections.decrementAndGet();
    }
    try {
      long now = server.ticker().read();
      try {
        abandonAwaiting(now); // while its session is still registered, as any answer would be
      } finally {
        for (LongObjectHashMap.PrimitiveEntry<Object> session : sessions.entries()) {
          if (session.value() == OWNED) {
            server.unbind(session.key(), ctx.channel());
            server.gate().deregister(session.key(), now);
          }
        }
        sessions.clear();
      }
    } finally {
      super.channelInactive(ctx); // releases the decoder's buffer whatever the gate did
    }
  }

  @Override
  protected void handlerRemoved0(ChannelHandlerContext ctx) {
    // Taken off a connection that stays open: what it holds of a frame goes to whoever is next,
    // and so does the time to complete it.
    cancelFrameTimeout();
    if (awaiting != null) {
      abandonAwaiting(server.ticker().read());
    }
  }

  /** Bytes read from the connection and held here, not yet decoded or skipped (tests). */
  int heldBytes() {
    return actualReadableBytes();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    Throwable root = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null
        ? cause.getCause() : cause;
    if (closing) {
      // Every answer queued when the connection failed fails with it, each reported here: one
      // warning per connection, so a peer that resets with a full buffer cannot flood the log.
      LOG.log(Level.DEBUG, "after closing " + ctx.channel().remoteAddress(), root);
      return;
    }
    closing = true;
    if (root instanceof FrameException) {
      LOG.log(Level.WARNING, "closing {0}: malformed frame: {1}", ctx.channel().remoteAddress(), root.getMessage());
    } else {
      LOG.log(Level.WARNING, "closing " + ctx.channel().remoteAddress() + " after an error", root);
    }
    ctx.close();
  }

  /** An admitted request on its way through the dispatcher. */
  private final class Dispatch implements Runnable, LoopQueue.Task {
    private final ServerPermit permit;
    private final long sessionId;
    private final long requestId;
    private final long budgetNanos;
    private final ByteBuf payload;
    private final long admittedAt;

    Dispatch(ServerPermit permit, long sessionId, long requestId, long budgetNanos, ByteBuf payload,
        long admittedAt) {
      this.permit = permit;
      this.sessionId = sessionId;
      this.requestId = requestId;
      this.budgetNanos = budgetNanos;
      this.payload = payload;
      this.admittedAt = admittedAt;
    }

    /** On the dispatcher: reads the clock only if the request has a budget to check. */
    @Override
    public void run() {
      execute(false, 0);
    }

    /** On the loop queue, which has just read the clock. */
    @Override
    public void runAt(long nowNanos) {
      execute(true, nowNanos);
    }

    /** On the loop, which is stopping or whose workers refused it: the request ends as a failure, unrun. */
    @Override
    public void abandon() {
      payload.release();
      respond(permit, Outcome.FAILED, sessionId, requestId, Unpooled.EMPTY_BUFFER, server.ticker().read());
    }

    private void execute(boolean clockRead, long nowNanos) {
      // Out of the dispatcher's queue: no longer waiting (ServerPermit#started). The one clock
      // reading at dispatch serves this and the budget check.
      long now = clockRead ? nowNanos : server.ticker().read();
      permit.started(now);
      ByteBuf response = Unpooled.EMPTY_BUFFER;
      Outcome outcome;
      try {
        response = invoke(true, now);
        if (response != null && response.readableBytes() > server.maxResponsePayload()) {
          // A client refuses a longer frame by closing its connection, failing every call there:
          // this request fails alone instead.
          ByteBuf tooLong = response;
          response = Unpooled.EMPTY_BUFFER;
          int length = tooLong.readableBytes();
          tooLong.release();
          throw new IllegalStateException("the handler's response of " + length
              + " bytes exceeds the frame limit of " + server.maxResponsePayload() + " (Builder.maxPayload)");
        }
        outcome = Outcome.SUCCESS;
      } catch (Throwable t) {
        outcome = server.isBudgetAbort(t) ? Outcome.ABORTED : Outcome.FAILED;
        if (outcome == Outcome.FAILED) {
          HandlerFailures.report(LOG, t);
        }
      } finally {
        payload.release();
      }
      Outcome ended = outcome;
      ByteBuf body = response == null ? Unpooled.EMPTY_BUFFER : response;
      if (ctx.executor().inEventLoop()) {
        respond(permit, ended, sessionId, requestId, body, server.ticker().read());
        return;
      }
      Runnable answer = () -> respond(permit, ended, sessionId, requestId, body, server.ticker().read());
      try {
        ctx.executor().execute(answer);
      } catch (RejectedExecutionException loopGone) {
        // The loop is shutting down: the permit must still end exactly once.
        permit.complete(ended, server.ticker().read(), new ResponseMetadata());
        ReferenceCountUtil.release(body);
      }
    }

    private ByteBuf invoke(boolean clockRead, long nowNanos) throws Exception {
      long budget = server.budgetAtDispatch(budgetNanos, admittedAt, clockRead, nowNanos);
      if (budget == Long.MAX_VALUE) {
        return server.handler().handle(payload, ctx.alloc());
      }
      return ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(budget))
          .call(() -> server.handler().handle(payload, ctx.alloc()));
    }
  }
}
