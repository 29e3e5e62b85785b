package io.spillway.kv;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.ExecutorBacklogProbe;
import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.LongFunction;

/**
 * memcached's text protocol on one connection: commands parsed from the byte stream, answered in
 * order (pipelined commands included), executed in-line on the connection's event loop as a
 * memcached worker thread executes them.
 *
 * <h2>Overload control for unmodified clients</h2>
 *
 * <p>A data command is put to the {@link KvServer}'s gate after its command line is parsed and
 * before its value is read. A refused command is answered at once with {@code SERVER_ERROR
 * overloaded (reason)} (memcached's own error form; nothing with {@code noreply}) and the bytes
 * of its value are skipped without being buffered. An admitted command runs with a queueing
 * budget in scope (protego-nsdi23 §3.2: target delay − p99 service time), so its slab and item
 * locks refuse it when their queues would make it late; it then gets the same reply, and a SET
 * already holding a chunk frees it ({@link KvStore}).
 *
 * <h2>Bad input</h2>
 *
 * <p>An unknown command gets {@code ERROR}; a malformed line, a bad key, a negative or
 * non-numeric length {@code CLIENT_ERROR bad command line format}; a value whose item would pass
 * memcached's 1 MiB item limit {@code SERVER_ERROR object too large for cache} with its bytes
 * skipped; a value not followed by
 * {@code \r\n} {@code CLIENT_ERROR bad data chunk}. A line longer than {@link #MAX_LINE} without
 * a newline cannot be resynchronised: the connection gets {@code CLIENT_ERROR line too long} and
 * is closed. Input buffered per connection is bounded by the line limit (values go straight to
 * their chunks), so a client that sends half a command and stalls holds at most that.
 *
 * <p>An admitted command that waits for the rest of its input, a value or the rest of a long
 * multi-get line, holds its permit (and a value its chunk) meanwhile. A client that stalls there
 * loses its connection once the command has waited {@link KvServer.Builder#inputTimeout} for it,
 * as a servlet container closes a connection whose request body stalls; the command then ends as
 * the connection's end leaves it (its chunk freed, its permit {@code ABORTED}). memcached waits
 * for as long as the connection stays open (its {@code idle_timeout} is off by default), but its
 * workers hold no admission slot while they wait.
 *
 * <p>A command line begun and left without its newline has as long, from the read that left it
 * so, before the connection is closed, as servlet containers close a connection whose request
 * headers stall. Nothing is admitted yet, but a client could otherwise keep its connection and up
 * to {@link #MAX_LINE} buffered bytes for as long as it liked by trickling lines (the slow-loris
 * attack). A connection between commands, nothing of the next one read, is idle, not stalled, and
 * is not timed; nor is input that is skipped, not kept (a refused value, the rest of a line
 * already answered). Only a read that leaves input incomplete sets the timer, so commands read
 * whole, the common case, schedule nothing; and a timeout that passes while the server has
 * stopped reading the connection, for its client to read, is set again, the wait being the
 * server's.
 *
 * <p>A {@code get} or {@code gets} line is the exception: memcached answers a multi-get of any
 * length (its {@code try_read_command_ascii} keeps reading a long line that starts so, and closes
 * the connection on any other), and clients send one line for a whole bulk get. Such a line is
 * read in parts, each ending at a space, whose keys are served as they come ({@link
 * #readGetLine}); its {@code END} follows the last. A key over 250 bytes in it gets {@code
 * CLIENT_ERROR bad command line format} and the rest of the line is skipped.
 *
 * <h2>Time</h2>
 *
 * <p>The clock is read once per command, as it is parsed; that reading is also the previous
 * command's completion time (commands run back to back on this thread), and the last command of
 * a read completes with one more reading when the read is done.
 *
 * <p>Not thread-safe: one per channel, called on its event loop.
 */
final class TextProtocolHandler extends ByteToMessageDecoder {

  private static final System.Logger LOG = System.getLogger(TextProtocolHandler.class.getName());

  /**
   * The longest command line accepted, and the most of one buffered: a multi-get line past it is
   * read in parts ({@link #readGetLine}).
   */
  static final int MAX_LINE = 16 * 1024;

  private static final byte[] CRLF = {'\r', '\n'};
  private static final byte[] END = bytes("END\r\n");
  private static final byte[] STORED = bytes("STORED\r\n");
  private static final byte[] NOT_STORED = bytes("NOT_STORED\r\n");
  private static final byte[] EXISTS = bytes("EXISTS\r\n");
  private static final byte[] NOT_FOUND = bytes("NOT_FOUND\r\n");
  private static final byte[] DELETED = bytes("DELETED\r\n");
  private static final byte[] TOUCHED = bytes("TOUCHED\r\n");
  private static final byte[] OK = bytes("OK\r\n");
  private static final byte[] ERROR = bytes("ERROR\r\n");
  private static final byte[] BAD_FORMAT = bytes("CLIENT_ERROR bad command line format\r\n");
  private static final byte[] BAD_CHUNK = bytes("CLIENT_ERROR bad data chunk\r\n");
  private static final byte[] TOO_LONG = bytes("CLIENT_ERROR line too long\r\n");
  private static final byte[] NON_NUMERIC =
      bytes("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  private static final byte[] INVALID_DELTA = bytes("CLIENT_ERROR invalid numeric delta argument\r\n");
  private static final byte[] VALUE = bytes("VALUE ");
  private static final byte[] VERSION_LINE = bytes("VERSION " + KvServer.VERSION + "\r\n");
  private static final byte[] BAD_EXPTIME = bytes("CLIENT_ERROR invalid exptime argument\r\n");

  private final KvServer server;
  private final KvStore store;
  private final RequestMetadata header = new RequestMetadata();
  /** The gates' response fields, unused by the text protocol (it has no place for them). */
  private final ResponseMetadata scratch = new ResponseMetadata();
  private final Tokens tokens = new Tokens();

  /** Bytes of a refused or unstorable value still to skip, its {@code \r\n} included. */
  private long swallow;
  /** A value being read into its chunk; -1 when none. */
  private int valueChunk = -1;
  private int valueLength;
  private int valueRead;
  private KvStore.Mode valueMode;
  private byte[] valueKey;
  private int valueFlags;
  private long valueExptime;
  private long valueCas;
  private boolean valueNoreply;
  private ServerPermit valuePermit;
  private RequestBudget valueBudget;
  private long valueStart;
  /**
   * Closes the connection if the input awaited does not come in time: what an admitted command
   * waits for, or the rest of a command line begun.
   */
  private java.util.concurrent.ScheduledFuture<?> inputTimer;
  /** A command line has begun and its newline has not come; nothing of it is decided yet. */
  private boolean lineBegun;

  /** A multi-get stopped for its client to read ({@link #serveGet}); null when none. */
  private byte[][] getKeys;
  private int getNext;
  private boolean getWithCas;
  private ServerPermit getPermit;
  private long getStart;
  private RequestBudget getBudget;
  /** Where its reply starts in {@link #out}, while none of it has been handed to the channel. */
  private int getMark;
  private boolean getStreamed;
  /** When the multi-get last stopped for its client; the wait is not service and moves getStart on. */
  private long getPausedAt;
  /** The multi-get's line goes on past the keys read so far ({@link #readGetLine}). */
  private boolean getLineOpen;
  /** The multi-get's line waits for more of its keys; that wait is not service either. */
  private boolean getLineWaiting;
  /** The rest of a line already answered is skipped, up to its newline. */
  private boolean skipLine;

  /** The last command's permit, completed at the next clock reading. */
  private ServerPermit pending;
  private Outcome pendingOutcome;
  private long pendingStart;

  private ByteBuf out;
  private boolean closing;
  /** Reading and decoding stopped until the peer drains what it has been sent. */
  private boolean paused;
  /** Replies written to the channel since its last flush. */
  private boolean unflushed;

  /**
   * Replies gathered past this many bytes are handed to the channel, so that its writability (Netty's
   * write-buffer water marks) reflects them before the next command is decoded.
   */
  static final int OUT_HIGH_WATER = 64 * 1024;

  private final ExecutorBacklogProbe loopProbe;

  TextProtocolHandler(KvServer server, ExecutorBacklogProbe loopProbe) {
    this.server = server;
    this.store = server.store();
    this.loopProbe = loopProbe;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> unused) {
    currentCtx = ctx;
    while (in.isReadable() && !closing) {
      if (out != null && out.readableBytes() >= OUT_HIGH_WATER) {
        ByteBuf b = out;
        out = null;
        ctx.write(b);
        unflushed = true;
        getStreamed |= getLineOpen;
      }
      if (!ctx.channel().isWritable()) {
        if (!ctx.channel().isActive()) {
          // Closed with input left (half a command): nothing can be answered, and what it holds
          // is given back when the handler is removed. Not a pause: none would ever end.
          return;
        }
        // A client that sends and does not read: stop decoding and reading, as memcached stops
        // processing a connection it cannot write to, so the replies it has not taken stay
        // bounded by the water marks (plus one reply) instead of growing with its requests.
        // Counted once however often decoding is attempted while paused.
        pause(ctx);
        return;
      }
      if (getKeys != null && !serveGet(ctx)) {
        return;
      }
      if (swallow > 0) {
        int n = (int) Math.min(swallow, in.readableBytes());
        in.skipBytes(n);
        swallow -= n;
        continue;
      }
      if (valueChunk >= 0) {
        if (!readValue(in)) {
          return;
        }
        continue;
      }
      if (skipLine) {
        int eol = in.indexOf(in.readerIndex(), in.writerIndex(), (byte) '\n');
        if (eol < 0) {
          in.skipBytes(in.readableBytes());
          return;
        }
        in.readerIndex(eol + 1);
        skipLine = false;
        continue;
      }
      if (getLineOpen) {
        if (!readGetLine(ctx, in)) {
          return;
        }
        continue;
      }
      int eol = in.indexOf(in.readerIndex(), in.readerIndex() + Math.min(in.readableBytes(), MAX_LINE + 2),
          (byte) '\n');
      if (eol < 0 && in.readableBytes() <= MAX_LINE) {
        lineBegun = true; // channelReadComplete sets its timer
        return;
      }
      if (lineBegun) {
        lineBegun = false;
        inputDone();
      }
      if (eol < 0) {
        if (startGetLine(ctx, in)) {
          continue;
        }
        out(ctx).writeBytes(TOO_LONG);
        closing = true;
        in.skipBytes(in.readableBytes());
        return;
      }
      int end = eol > in.readerIndex() && in.getByte(eol - 1) == '\r' ? eol - 1 : eol;
      tokens.split(in, in.readerIndex(), end);
      in.readerIndex(eol + 1);
      command(ctx, in);
      tokens.shrink();
    }
  }

  private void pause(ChannelHandlerContext ctx) {
    if (!paused) {
      paused = true;
      server.connectionPaused(true);
      ctx.channel().config().setAutoRead(false);
    }
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
    if (pending != null) {
      completePending(server.ticker().read());
    }
    if (inputTimer == null && (valueChunk >= 0 || getLineOpen || lineBegun) && !closing) {
      awaitInput(ctx);
    }
    flush(ctx);
    if (paused) {
      // not super's: with auto-read off and no message decoded it would ask for another read
      ctx.fireChannelReadComplete();
      return;
    }
    super.channelReadComplete(ctx);
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
    if (paused && ctx.channel().isWritable()) {
      paused = false;
      server.connectionPaused(false);
      ctx.channel().config().setAutoRead(true);
      currentCtx = ctx;
      if (getKeys != null) {
        // The time its client took to read is not the server's work: counted as service, one slow
        // reader's multi-get would raise the p99 service estimate that every request's budget is
        // derived from (protego-nsdi23 §3.2).
        getStart += server.ticker().read() - getPausedAt;
      }
      if (getKeys == null || serveGet(ctx)) { // a multi-get stopped between keys goes on first
        channelRead(ctx, Unpooled.EMPTY_BUFFER); // decode what was read before the pause
      }
      channelReadComplete(ctx);
    }
    super.channelWritabilityChanged(ctx);
  }

  @Override
  protected void handlerRemoved0(ChannelHandlerContext ctx) {
    inputDone();
    if (paused) {
      paused = false;
      server.connectionPaused(false);
    }
    if (valueChunk >= 0) {
      store.release(valueChunk);
      valueChunk = -1;
      finish(valuePermit, Outcome.ABORTED, server.ticker().read());
    }
    if (getPermit != null) {
      if (pending != null) {
        completePending(server.ticker().read());
      }
      endGet(Outcome.ABORTED);
    }
    if (pending != null) {
      completePending(server.ticker().read());
    }
    if (out != null) {
      out.release();
      out = null;
    }
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    server.connectionFailed(cause);
    ctx.close();
  }

  private ByteBuf out(ChannelHandlerContext ctx) {
    if (out == null) {
      out = ctx.alloc().ioBuffer(256);
    }
    return out;
  }

  private void flush(ChannelHandlerContext ctx) {
    if (unflushed && out == null && !closing) {
      ctx.flush();
    }
    unflushed = false;
    if (out != null) {
      getStreamed |= getLineOpen;
      ByteBuf b = out;
      out = null;
      if (closing) {
        ctx.writeAndFlush(b).addListener(ChannelFutureListener.CLOSE);
      } else {
        ctx.writeAndFlush(b);
      }
    } else if (closing) {
      ctx.close();
    }
  }

  private long now() {
    long now = server.ticker().read();
    if (loopProbe != null) {
      loopProbe.arrived(now);
    }
    if (pending != null) {
      completePending(now);
    }
    return now;
  }

  private void completePending(long now) {
    ServerPermit p = pending;
    pending = null;
    server.completed(p, pendingOutcome, pendingStart, now, scratch.reset());
  }

  private void finish(ServerPermit permit, Outcome outcome, long start) {
    finish(permit, outcome, start, null);
  }

  /**
   * Ends {@code permit} when the next command is read. The time {@code budget} was charged for
   * waits on the store's budgeted locks is queueing, not service (RequestBudget#chargedNanos), so
   * the service time the p99 estimate records starts that much later.
   */
  private void finish(ServerPermit permit, Outcome outcome, long start, RequestBudget budget) {
    if (permit != null) {
      pending = permit;
      pendingOutcome = outcome;
      pendingStart = budget == null ? start : start + budget.chargedNanos();
    }
  }

  // ---------------------------------------------------------------- commands

  private void command(ChannelHandlerContext ctx, ByteBuf in) {
    int n = tokens.count;
    if (n == 0) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    switch (tokens.command()) {
      case "get" -> retrieve(ctx, false);
      case "gets" -> retrieve(ctx, true);
      case "set" -> storage(ctx, KvStore.Mode.SET, false);
      case "add" -> storage(ctx, KvStore.Mode.ADD, false);
      case "replace" -> storage(ctx, KvStore.Mode.REPLACE, false);
      case "append" -> storage(ctx, KvStore.Mode.APPEND, false);
      case "prepend" -> storage(ctx, KvStore.Mode.PREPEND, false);
      case "cas" -> storage(ctx, KvStore.Mode.CAS, true);
      case "delete" -> delete(ctx);
      case "incr" -> delta(ctx, true);
      case "decr" -> delta(ctx, false);
      case "touch" -> touch(ctx);
      case "flush_all" -> flushAll(ctx);
      // memcached answers version whatever follows it; verbosity wants a level it can parse as
      // an unsigned number, and ignores a second argument other than noreply
      case "version" -> out(ctx).writeBytes(VERSION_LINE);
      case "verbosity" -> {
        long[] level = new long[1];
        byte[] arg = n > 1 ? tokens.bytes(1) : null;
        if (n == 1 || n > 3) {
          out(ctx).writeBytes(ERROR);
        } else if (!KvStore.strtoull(arg, 0, arg.length, level)) {
          error(ctx, BAD_FORMAT, tokens.isNoreply(n - 1));
        } else if (!tokens.isNoreply(n - 1)) {
          out(ctx).writeBytes(OK);
        }
      }
      case "stats" -> stats(ctx);
      case "quit" -> closing = true; // as memcached: whatever follows it
      default -> out(ctx).writeBytes(ERROR);
    }
  }

  /** Admits a data command; null (the reply written) if refused. */
  private ServerPermit admit(ChannelHandlerContext ctx, long now, boolean noreply) {
    header.reset();
    ServerPermit permit = server.gate().admit(header, now);
    if (!permit.isAdmitted()) {
      server.refused(permit.status());
      permit.complete(Outcome.DROPPED, now, scratch.reset());
      if (!noreply) {
        out(ctx).writeBytes(server.rejectLine(permit.status()));
      }
      return null;
    }
    return permit;
  }

  /**
   * A command's error reply, or none with {@code noreply}: memcached's {@code out_string} drops
   * every reply of a command that asked for none, errors included, so a client that pipelines
   * {@code noreply} commands never reads a line it did not ask for.
   */
  private void error(ChannelHandlerContext ctx, byte[] line, boolean noreply) {
    if (!noreply) {
      out(ctx).writeBytes(line);
    }
  }

  private void refusedByLock(ChannelHandlerContext ctx, boolean noreply) {
    server.refused(Status.REJECTED_BUDGET);
    if (!noreply) {
      out(ctx).writeBytes(server.rejectLine(Status.REJECTED_BUDGET));
    }
  }

  private void retrieve(ChannelHandlerContext ctx, boolean withCas) {
    int n = tokens.count;
    if (n < 2) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    for (int i = 1; i < n; i++) {
      if (tokens.length(i) > KvStore.MAX_KEY_LENGTH) {
        out(ctx).writeBytes(BAD_FORMAT);
        return;
      }
    }
    long now = now();
    ServerPermit permit = admit(ctx, now, false);
    if (permit == null) {
      return;
    }
    byte[][] keys = new byte[n - 1][];
    for (int i = 1; i < n; i++) {
      keys[i - 1] = tokens.bytes(i);
    }
    getKeys = keys;
    getNext = 0;
    beginGet(ctx, withCas, permit, now);
    serveGet(ctx);
  }

  /** A multi-get admitted with {@code permit} at {@code now} begins: its reply starts here. */
  private void beginGet(ChannelHandlerContext ctx, boolean withCas, ServerPermit permit, long now) {
    getWithCas = withCas;
    getPermit = permit;
    getStart = now;
    getBudget = server.budget();
    getMark = out(ctx).writerIndex();
    getStreamed = false;
  }

  /**
   * Serves the multi-get's keys from {@link #getNext} on. Its reply is handed to the channel
   * whenever it passes {@link #OUT_HIGH_WATER}, and once the channel is over its water marks the
   * command stops between two keys (the connection pauses, as between commands) and goes on when
   * the client has taken what it was sent: memcached streams a multi-get's items the same way,
   * so a line of thousands of keys for a 1 MiB value never builds its reply in memory at once.
   *
   * @return whether the command is done (answered, or refused by a lock)
   */
  private boolean serveGet(ChannelHandlerContext ctx) {
    try {
      boolean done = ScopedValue.where(RequestBudget.CURRENT, getBudget).call(() -> {
        while (getNext < getKeys.length) {
          if (out != null && out.readableBytes() >= OUT_HIGH_WATER) {
            ByteBuf b = out;
            out = null;
            ctx.write(b);
            unflushed = true;
            getStreamed = true;
            if (!ctx.channel().isWritable()) {
              return false;
            }
          }
          ByteBuf o = out(ctx);
          store.get(getKeys[getNext], getStart, (k, flags, cas, page, offset, length) -> {
            o.writeBytes(VALUE).writeBytes(k).writeByte(' ');
            writeDecimal(o, flags & 0xFFFFFFFFL);
            o.writeByte(' ');
            writeDecimal(o, length);
            if (getWithCas) {
              o.writeByte(' ');
              writeDecimal(o, cas);
            }
            o.writeBytes(CRLF).writeBytes(page, offset, length).writeBytes(CRLF);
          });
          getNext++;
        }
        return true;
      });
      if (!done) {
        getPausedAt = server.ticker().read();
        pause(ctx);
        return false;
      }
      if (getLineOpen) {
        getKeys = null; // the line's next keys are still to be read
        return true;
      }
      out(ctx).writeBytes(END);
      endGet(Outcome.SUCCESS);
    } catch (BudgetExceededException e) {
      if (!getStreamed) {
        out(ctx).writerIndex(getMark); // nothing of it was sent: the refusal is its whole reply
      }
      refusedByLock(ctx, false);
      endGet(Outcome.ABORTED);
    }
    return true;
  }

  private void endGet(Outcome outcome) {
    finish(getPermit, outcome, getStart, getBudget);
    getKeys = null;
    getPermit = null;
    getBudget = null;
    if (getLineOpen) {
      getLineOpen = false;
      inputDone();
      skipLine = true; // answered: what is left of its line is not a command
    }
  }

  /**
   * Starts a multi-get whose line passes {@link #MAX_LINE} without a newline, as memcached accepts
   * a long line that starts with {@code get } or {@code gets }; false if this line does not. The
   * command is admitted once, here; its keys are read by {@link #readGetLine}.
   */
  private boolean startGetLine(ChannelHandlerContext ctx, ByteBuf in) {
    int i = in.readerIndex();
    while (in.getByte(i) == ' ' && i - in.readerIndex() < 100) { // memcached's leading-space limit
      i++;
    }
    boolean withCas;
    if (startsWith(in, i, "get ")) {
      withCas = false;
      i += 4;
    } else if (startsWith(in, i, "gets ")) {
      withCas = true;
      i += 5;
    } else {
      return false;
    }
    in.readerIndex(i);
    long now = now();
    ServerPermit permit = admit(ctx, now, false);
    if (permit == null) {
      skipLine = true;
      return true;
    }
    beginGet(ctx, withCas, permit, now);
    getLineOpen = true;
    getLineWaiting = false;
    return true;
  }

  private static boolean startsWith(ByteBuf in, int at, String prefix) {
    if (in.writerIndex() - at < prefix.length()) {
      return false;
    }
    for (int j = 0; j < prefix.length(); j++) {
      if (in.getByte(at + j) != prefix.charAt(j)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Reads the next keys of a long multi-get line ({@link #startGetLine}): up to its newline if
   * that is within {@link #MAX_LINE}, else up to the last space there (a key cut by the end of
   * the input waits for its rest), and serves them. Buffered input stays within the line limit
   * however long the line. A key over 250 bytes ends the command with {@code CLIENT_ERROR bad
   * command line format}, after whatever of its reply was already sent.
   *
   * @return false if more input is needed or the connection paused
   */
  private boolean readGetLine(ChannelHandlerContext ctx, ByteBuf in) {
    if (getLineWaiting) {
      getLineWaiting = false;
      getStart += server.ticker().read() - getPausedAt; // its client's sending is not service
    }
    int from = in.readerIndex();
    int window = from + Math.min(in.readableBytes(), MAX_LINE + 2);
    int eol = in.indexOf(from, window, (byte) '\n');
    int to;
    if (eol >= 0) {
      to = eol > from && in.getByte(eol - 1) == '\r' ? eol - 1 : eol;
      in.readerIndex(eol + 1);
      getLineOpen = false;
      inputDone();
    } else {
      int space = in.indexOf(window, from, (byte) ' '); // the last one in the window
      if (space < 0) {
        if (in.readableBytes() > MAX_LINE) {
          badGetKey(ctx); // one token past the line limit: a key far over 250 bytes
          return true;
        }
        getLineWaiting = true;
        getPausedAt = server.ticker().read();
        return false;
      }
      to = space;
      in.readerIndex(space + 1);
    }
    tokens.split(in, from, to);
    byte[][] keys = new byte[tokens.count][];
    for (int i = 0; i < tokens.count; i++) {
      if (tokens.length(i) > KvStore.MAX_KEY_LENGTH) {
        tokens.shrink();
        badGetKey(ctx);
        return true;
      }
      keys[i] = tokens.bytes(i);
    }
    tokens.shrink();
    getKeys = keys;
    getNext = 0;
    return serveGet(ctx);
  }

  private void badGetKey(ChannelHandlerContext ctx) {
    if (!getStreamed) {
      out(ctx).writerIndex(getMark); // as for a short line: the error is its whole reply
    }
    out(ctx).writeBytes(BAD_FORMAT);
    endGet(Outcome.SUCCESS);
  }

  private void storage(ChannelHandlerContext ctx, KvStore.Mode mode, boolean cas) {
    int n = tokens.count;
    int base = cas ? 7 : 6;
    // memcached's set_noreply_maybe looks at the last token whatever the count, so a line one
    // token short that ends in noreply is refused silently
    boolean noreply = tokens.isNoreply(n - 1);
    // memcached dispatches on the token count: too few or too many is an unknown command, and a
    // last token other than noreply is ignored
    if (n != base && n != base - 1) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    long[] number = new long[1];
    boolean flagsParsed = tokens.parseUnsigned(2, number);
    long flags = number[0];
    long exptime = tokens.parseInt32(3);
    long length = tokens.parseInt32(4);
    boolean casParsed = !cas || tokens.parseUnsigned(5, number);
    long casIn = cas ? number[0] : 0;
    if (tokens.length(1) > KvStore.MAX_KEY_LENGTH || !flagsParsed || flags < 0 || flags > 0xFFFFFFFFL
        || exptime == Long.MIN_VALUE || length == Long.MIN_VALUE || !casParsed) {
      error(ctx, BAD_FORMAT, noreply);
      return;
    }
    if (length < 0 || length > Integer.MAX_VALUE - 2) {
      // memcached answers and cannot know how much data follows; treat the next line as a command
      error(ctx, BAD_FORMAT, noreply);
      return;
    }
    long now = now();
    ServerPermit permit = admit(ctx, now, noreply);
    if (permit == null) {
      swallow = length + 2;
      return;
    }
    if (KvStore.itemSize(tokens.length(1), flags, length) > SlabAllocator.PAGE_SIZE) {
      error(ctx, bytes("SERVER_ERROR object too large for cache\r\n"), noreply);
      swallow = length + 2;
      dropStale(mode, now);
      finish(permit, Outcome.SUCCESS, now);
      return;
    }
    RequestBudget budget = server.budget();
    int chunk;
    try {
      chunk = ScopedValue.where(RequestBudget.CURRENT, budget).call(() -> store.reserve((int) length, now));
    } catch (BudgetExceededException e) {
      refusedByLock(ctx, noreply);
      swallow = length + 2;
      finish(permit, Outcome.ABORTED, now);
      return;
    } catch (KvStore.StoreFailure e) {
      error(ctx, bytes("SERVER_ERROR " + e.getMessage() + "\r\n"), noreply);
      swallow = length + 2;
      dropStale(mode, now);
      finish(permit, Outcome.SUCCESS, now);
      return;
    }
    valueChunk = chunk;
    valueLength = (int) length;
    valueRead = 0;
    valueMode = mode;
    valueKey = tokens.bytes(1);
    valueFlags = (int) flags;
    valueExptime = exptime;
    valueCas = casIn;
    valueNoreply = noreply;
    valuePermit = permit;
    valueBudget = budget;
    valueStart = now;
  }

  /**
   * An admitted command waits for the rest of its input, or a command line for its newline: see
   * the class comment. Set when a read has been decoded and left it waiting ({@link
   * #channelReadComplete}), so a value that came with its command line, the common case, never
   * sets a timer.
   */
  private void awaitInput(ChannelHandlerContext ctx) {
    inputTimer = ctx.executor().schedule(() -> inputTimedOut(ctx), server.inputTimeoutNanos(),
        java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  /** The input {@link #awaitInput} waited for has all come, or the command ended without it. */
  private void inputDone() {
    if (inputTimer != null) {
      inputTimer.cancel(false);
      inputTimer = null;
    }
  }

  private void inputTimedOut(ChannelHandlerContext ctx) {
    inputTimer = null;
    if (valueChunk < 0 && !getLineOpen && !lineBegun) {
      return;
    }
    if (paused) {
      awaitInput(ctx); // the server stopped reading, for its client to read: not the client's stall
      return;
    }
    long millis = server.inputTimeoutNanos() / 1_000_000;
    if (lineBegun) {
      LOG.log(System.Logger.Level.WARNING, "closing {0}: a command line begun {1} ms ago has no newline"
          + " after {2} bytes (KvServer.Builder.inputTimeout)", ctx.channel().remoteAddress(), millis,
          actualReadableBytes());
    } else {
      LOG.log(System.Logger.Level.WARNING, "closing {0}: an admitted command''s {1} not received {2} ms"
          + " after its command line (KvServer.Builder.inputTimeout)", ctx.channel().remoteAddress(),
          valueChunk >= 0 ? "value" : "multi-get line", millis);
    }
    closing = true;
    ctx.close(); // removing this handler frees the chunk, ends the permit and releases what is held
  }

  /**
   * A SET whose value cannot be stored (too large, or no memory) removes the key's old value, as
   * memcached's {@code process_update_command} unlinks it: a client that was told its write failed
   * must not read the value the write meant to replace. Outside the budget's scope, so with the
   * plain acquire: the reply is already decided and the removal must not be refused.
   */
  private void dropStale(KvStore.Mode mode, long now) {
    if (mode == KvStore.Mode.SET) {
      store.delete(tokens.bytes(1), now);
    }
  }

  /** Reads the pending value into its chunk; false if more bytes are needed. */
  private boolean readValue(ByteBuf in) {
    int want = valueLength - valueRead;
    if (want > 0) {
      int n = Math.min(want, in.readableBytes());
      in.readBytes(store.page(valueChunk), store.offset(valueChunk) + valueRead, n);
      valueRead += n;
      if (valueRead < valueLength) {
        return false;
      }
    }
    if (in.readableBytes() < 2) {
      if (in.readableBytes() == 1 && in.getByte(in.readerIndex()) != '\r') {
        badChunk(in);
        return true;
      }
      return false;
    }
    if (in.getByte(in.readerIndex()) != '\r' || in.getByte(in.readerIndex() + 1) != '\n') {
      badChunk(in);
      return true;
    }
    in.skipBytes(2);
    inputDone();
    int chunk = valueChunk;
    valueChunk = -1;
    ChannelHandlerContext ctx = currentCtx;
    try {
      KvStore.StoreResult r = ScopedValue.where(RequestBudget.CURRENT, valueBudget).call(() ->
          store.store(valueMode, valueKey, valueFlags, valueExptime, valueCas, chunk, valueLength,
              valueStart));
      if (!valueNoreply) {
        out(ctx).writeBytes(switch (r) {
          case STORED -> STORED;
          case NOT_STORED -> NOT_STORED;
          case EXISTS -> EXISTS;
          case NOT_FOUND -> NOT_FOUND;
        });
      }
      finish(valuePermit, Outcome.SUCCESS, valueStart, valueBudget);
    } catch (BudgetExceededException e) {
      refusedByLock(ctx, valueNoreply);
      finish(valuePermit, Outcome.ABORTED, valueStart);
    } catch (KvStore.StoreFailure e) {
      error(ctx, bytes("SERVER_ERROR " + e.getMessage() + "\r\n"), valueNoreply);
      finish(valuePermit, Outcome.SUCCESS, valueStart, valueBudget);
    }
    valuePermit = null;
    valueBudget = null;
    valueKey = null;
    return true;
  }

  /**
   * The value is not followed by CRLF: memcached's "bad data chunk". As memcached, the two bytes
   * where CRLF should be are consumed and parsing goes on after them.
   */
  private void badChunk(ByteBuf in) {
    inputDone();
    store.release(valueChunk);
    valueChunk = -1;
    error(currentCtx, BAD_CHUNK, valueNoreply);
    finish(valuePermit, Outcome.SUCCESS, valueStart);
    valuePermit = null;
    valueBudget = null;
    valueKey = null;
    int n = Math.min(2, in.readableBytes());
    in.skipBytes(n);
    swallow = 2 - n;
  }

  private ChannelHandlerContext currentCtx;


  private void delete(ChannelHandlerContext ctx) {
    int n = tokens.count;
    boolean noreply = n > 2 && tokens.isNoreply(n - 1);
    // memcached dispatches delete with one to three arguments, else it is an unknown command; of
    // those it accepts "delete <key> 0" (a legacy hold time of zero) and noreply, nothing else
    if (n < 2 || n > 4) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    boolean holdIsZero = n > 2 && tokens.equals(2, "0");
    if ((n == 3 && !holdIsZero && !noreply) || (n == 4 && !(holdIsZero && noreply))) {
      error(ctx, bytes("CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"),
          noreply);
      return;
    }
    if (tokens.length(1) > KvStore.MAX_KEY_LENGTH) {
      error(ctx, BAD_FORMAT, noreply);
      return;
    }
    byte[] key = tokens.bytes(1);
    Boolean deleted = admitted(ctx, noreply, now -> store.delete(key, now));
    if (deleted != null && !noreply) {
      out(ctx).writeBytes(deleted ? DELETED : NOT_FOUND);
    }
  }

  /**
   * Admits a command whose line is parsed, runs {@code op} at the admission's clock reading with a
   * fresh budget in scope, and ends the permit: SUCCESS, or ABORTED after the refusal line when a
   * lock's queue exceeds the budget. Returns {@code op}'s result, or {@code null} when the command
   * was refused, at the gate or at a lock (its reply is written then).
   */
  private <T> T admitted(ChannelHandlerContext ctx, boolean noreply, LongFunction<T> op) {
    long now = now();
    ServerPermit permit = admit(ctx, now, noreply);
    if (permit == null) {
      return null;
    }
    try {
      RequestBudget budget = server.budget();
      T result = ScopedValue.where(RequestBudget.CURRENT, budget).call(() -> op.apply(now));
      finish(permit, Outcome.SUCCESS, now, budget);
      return result;
    } catch (BudgetExceededException e) {
      refusedByLock(ctx, noreply);
      finish(permit, Outcome.ABORTED, now);
      return null;
    }
  }

  private void delta(ChannelHandlerContext ctx, boolean incr) {
    int n = tokens.count;
    boolean noreply = tokens.isNoreply(n - 1); // the last token, as set_noreply_maybe reads it
    // as memcached dispatches: two or three arguments, a third other than noreply ignored
    if (n != 3 && n != 4) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    if (tokens.length(1) > KvStore.MAX_KEY_LENGTH) {
      error(ctx, BAD_FORMAT, noreply);
      return;
    }
    byte[] deltaToken = tokens.bytes(2);
    long[] parsed = new long[1];
    if (!KvStore.strtoull(deltaToken, 0, deltaToken.length, parsed)) {
      error(ctx, INVALID_DELTA, noreply);
      return;
    }
    long delta = parsed[0];
    byte[] key = tokens.bytes(1);
    KvStore.Delta r = admitted(ctx, noreply, now -> store.incrDecr(key, incr, delta, now));
    if (r != null && !noreply) {
      ByteBuf o = out(ctx);
      switch (r) {
        case KvStore.Delta.Value v -> {
          writeDecimal(o, v.unsigned());
          o.writeBytes(CRLF);
        }
        case KvStore.Delta.NotFound nf -> o.writeBytes(NOT_FOUND);
        case KvStore.Delta.NonNumeric nn -> o.writeBytes(NON_NUMERIC);
      }
    }
  }

  private void touch(ChannelHandlerContext ctx) {
    int n = tokens.count;
    boolean noreply = tokens.isNoreply(n - 1); // the last token, as set_noreply_maybe reads it
    // as memcached dispatches: two or three arguments, a third other than noreply ignored
    if (n != 3 && n != 4) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    if (tokens.length(1) > KvStore.MAX_KEY_LENGTH) {
      error(ctx, BAD_FORMAT, noreply);
      return;
    }
    long exptime = tokens.parseInt32(2);
    if (exptime == Long.MIN_VALUE) {
      error(ctx, BAD_EXPTIME, noreply);
      return;
    }
    byte[] key = tokens.bytes(1);
    Boolean touched = admitted(ctx, noreply, now -> store.touch(key, exptime, now));
    if (touched != null && !noreply) {
      out(ctx).writeBytes(touched ? TOUCHED : NOT_FOUND);
    }
  }

  private void flushAll(ChannelHandlerContext ctx) {
    int n = tokens.count;
    boolean noreply = n > 1 && tokens.isNoreply(n - 1);
    // as memcached dispatches: at most two arguments; unless the only one is noreply, the first
    // is the delay, and a second other than noreply is ignored
    if (n > 3) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    long delay = 0;
    if (n != (noreply ? 2 : 1)) {
      delay = tokens.parseInt32(1);
      if (delay == Long.MIN_VALUE) {
        error(ctx, BAD_EXPTIME, noreply);
        return;
      }
    }
    store.flushAll(delay, server.ticker().read());
    if (!noreply) {
      out(ctx).writeBytes(OK);
    }
  }

  private void stats(ChannelHandlerContext ctx) {
    int n = tokens.count;
    String sub = n == 1 ? "" : tokens.string(1);
    if (n > 2) {
      out(ctx).writeBytes(ERROR);
      return;
    }
    String text = switch (sub) {
      case "" -> server.stats();
      case "slabs" -> server.slabStats();
      case "reset" -> {
        server.resetStats();
        yield "RESET\r\n";
      }
      default -> null;
    };
    out(ctx).writeBytes(text == null ? ERROR : bytes(text));
  }

  // ---------------------------------------------------------------- helpers

  static void writeDecimal(ByteBuf o, long unsigned) {
    if (unsigned >= 0 && unsigned < 10) {
      o.writeByte('0' + (int) unsigned);
      return;
    }
    o.writeCharSequence(Long.toUnsignedString(unsigned), StandardCharsets.US_ASCII);
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * The space-separated tokens of one command line, as offsets into the input buffer. The table
   * grows with the line: memcached answers a multi-get of any number of keys, and a line within
   * {@link #MAX_LINE} holds thousands of short ones.
   */
  static final class Tokens {
    int[] start = new int[32];
    int[] end = new int[32];
    int count;
    ByteBuf buf;

    void split(ByteBuf b, int from, int to) {
      buf = b;
      count = 0;
      int i = from;
      while (i < to) {
        while (i < to && b.getByte(i) == ' ') {
          i++;
        }
        if (i >= to) {
          break;
        }
        int s = i;
        while (i < to && b.getByte(i) != ' ') {
          i++;
        }
        if (count == start.length) {
          start = java.util.Arrays.copyOf(start, 2 * count);
          end = java.util.Arrays.copyOf(end, 2 * count);
        }
        start[count] = s;
        end[count] = i;
        count++;
      }
    }

    /** Lets go of a table a long multi-get grew, so that an idle connection holds a small one. */
    void shrink() {
      if (start.length > 256) {
        start = new int[32];
        end = new int[32];
      }
    }

    String command() {
      return string(0);
    }

    int length(int i) {
      return end[i] - start[i];
    }

    String string(int i) {
      return buf.toString(start[i], length(i), StandardCharsets.US_ASCII);
    }

    byte[] bytes(int i) {
      byte[] k = new byte[length(i)];
      buf.getBytes(start[i], k);
      return k;
    }

    boolean equals(int i, String s) {
      if (length(i) != s.length()) {
        return false;
      }
      for (int j = 0; j < s.length(); j++) {
        if (buf.getByte(start[i] + j) != s.charAt(j)) {
          return false;
        }
      }
      return true;
    }

    boolean isNoreply(int i) {
      return i >= 0 && i < count && equals(i, "noreply");
    }

    /**
     * Token {@code i} as memcached's {@code safe_strtoull} reads it ({@link KvStore#strtoull}), into
     * {@code out[0]}; whether it is a number. Flags and CAS values are read so.
     */
    boolean parseUnsigned(int i, long[] out) {
      if (i >= count) {
        return false;
      }
      byte[] b = bytes(i);
      return KvStore.strtoull(b, 0, b.length, out);
    }

    /**
     * Token {@code i} as memcached's {@code safe_strtol} reads an exptime or a value's length: C's
     * {@code strtol} (white space, a sign, digits; beyond 64 bits is not a number), kept in an
     * {@code int32_t}, so modulo 2^32 as a signed value ({@code 4294967297} is 1, {@code
     * 2147483648} negative); Long.MIN_VALUE if not a number.
     */
    long parseInt32(int i) {
      if (i >= count) {
        return Long.MIN_VALUE;
      }
      byte[] b = bytes(i);
      int j = 0;
      while (j < b.length && KvStore.isSpace(b[j])) {
        j++;
      }
      boolean minus = false;
      if (j < b.length && (b[j] == '+' || b[j] == '-')) {
        minus = b[j] == '-';
        j++;
      }
      int digits = j;
      long v = 0; // accumulated negative: its range holds Long.MIN_VALUE
      boolean overflow = false;
      while (j < b.length && b[j] >= '0' && b[j] <= '9') {
        int d = b[j] - '0';
        if (v < (Long.MIN_VALUE + d) / 10) {
          overflow = true; // strtol's ERANGE; it still consumes the digits
        } else {
          v = v * 10 - d;
        }
        j++;
      }
      if (!minus && v == Long.MIN_VALUE) {
        overflow = true;
      }
      if (j == digits || overflow || (j < b.length && !KvStore.isSpace(b[j]) && b[j] != 0)) {
        return Long.MIN_VALUE;
      }
      return (int) (minus ? v : -v);
    }
  }
}
