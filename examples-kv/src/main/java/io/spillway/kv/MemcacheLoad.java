package io.spillway.kv;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.SplittableRandom;
import org.HdrHistogram.Histogram;

/**
 * An open-loop memcached text-protocol load generator: Poisson arrivals at a fixed rate spread
 * over many connections, each request's latency measured from the time it was due to be sent
 * (no coordinated omission), replies parsed in order per connection. Requests follow {@link
 * VarWorkload}'s keys and sizes with a chosen SET share. A reply {@code SERVER_ERROR overloaded} is
 * a reject; its latency is the reject delay.
 *
 * <p>One thread, busy-polling its selector: run it pinned to a core of its own
 * ({@code ./spillway kv-load}). Not thread-safe.
 */
public final class MemcacheLoad {

  /** What one run measured. */
  public record Report(double offeredRps, double seconds, long sent, long ok, long rejected,
      long errors, long unanswered, Histogram okLatency, Histogram rejectLatency, long sloNanos,
      long withinSlo, long rejectedAqm, long rejectedLimit, long rejectedBudget) {

    public double throughputRps() {
      return (ok + rejected + errors) / seconds;
    }

    public double goodputRps() {
      return withinSlo / seconds;
    }

    public String line() {
      return String.format(Locale.ROOT,
          "offered %.0f/s: ok %.0f/s, goodput %.0f/s (<= %d us), rejected %.1f %% (aqm %d, limit %d,"
              + " budget %d), errors %d, unanswered %d, p50 %.1f us, p99 %.1f us, p99.9 %.1f us,"
              + " reject p99 %.1f us",
          offeredRps, ok / seconds, goodputRps(), sloNanos / 1000,
          sent == 0 ? 0 : 100.0 * rejected / sent, rejectedAqm, rejectedLimit, rejectedBudget,
          errors, unanswered,
          okLatency.getValueAtPercentile(50) / 1e3, okLatency.getValueAtPercentile(99) / 1e3,
          okLatency.getValueAtPercentile(99.9) / 1e3,
          rejectLatency.getTotalCount() == 0 ? 0 : rejectLatency.getValueAtPercentile(99) / 1e3);
    }
  }

  private final InetSocketAddress server;
  private final int connections;
  private final VarWorkload workload;
  private final long sloNanos;

  public MemcacheLoad(InetSocketAddress server, int connections, double setShare, long seed,
      long sloNanos) {
    if (connections < 1) {
      throw new IllegalArgumentException("connections must be >= 1");
    }
    this.server = server;
    this.connections = connections;
    this.workload = new VarWorkload(seed, setShare);
    this.sloNanos = sloNanos;
  }

  /** Stores every key once (pipelined, over one connection) so that GETs hit. */
  public void preload() throws IOException {
    try (SocketChannel ch = SocketChannel.open(server)) {
      ch.configureBlocking(true);
      ByteBuffer out = ByteBuffer.allocate(1 << 20);
      ByteBuffer in = ByteBuffer.allocate(1 << 16);
      int expected = 0;
      long stored = 0;
      for (int k = 0; k < VarWorkload.KEYS; k++) {
        if (out.remaining() < 20_000) {
          out.flip();
          while (out.hasRemaining()) {
            ch.write(out);
          }
          out.clear();
        }
        encodeSet(out, k);
        expected++;
      }
      out.flip();
      while (out.hasRemaining()) {
        ch.write(out);
      }
      byte[] line = "STORED\r\n".getBytes(StandardCharsets.US_ASCII);
      long bytes = (long) expected * line.length;
      while (stored < bytes) {
        in.clear();
        int n = ch.read(in);
        if (n < 0) {
          throw new IOException("server closed during preload");
        }
        stored += n;
      }
    }
  }

  private final byte[] valueBytes = "x".repeat(16 * 1024).getBytes(StandardCharsets.US_ASCII);
  /** Each key's value length in ASCII, made once: the generator allocates nothing per request. */
  private final byte[][] lengthText = new byte[VarWorkload.KEYS][];

  private void encodeSet(ByteBuffer out, int k) {
    int length = workload.valueLength(k);
    byte[] text = lengthText[k];
    if (text == null) {
      text = lengthText[k] = Integer.toString(length).getBytes(StandardCharsets.US_ASCII);
    }
    out.put(SET).put(workload.key(k)).put(ZERO_ZERO).put(text).put(CRLF)
        .put(valueBytes, 0, length).put(CRLF);
  }

  private static final byte[] SET = "set ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] GET = "get ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] ZERO_ZERO = " 0 0 ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] CRLF = {'\r', '\n'};

  /** One connection: requests written, due times of those not yet answered, a reply parser. */
  private static final class Conn {
    final SocketChannel ch;
    ByteBuffer out = ByteBuffer.allocate(1 << 20);
    final ByteBuffer in = ByteBuffer.allocate(1 << 20);
    long[] due = new long[1024];
    boolean[] isGet = new boolean[1024];
    int head;
    int tail;
    /** Bytes of a VALUE's data (plus CRLF) still to skip. */
    long skip;
    boolean sawValue;

    Conn(SocketChannel ch) {
      this.ch = ch;
    }

    void push(long t, boolean get) {
      if (tail - head == due.length) {
        long[] d = new long[due.length * 2];
        boolean[] g = new boolean[due.length * 2];
        for (int i = head; i < tail; i++) {
          d[i - head] = due[i % due.length];
          g[i - head] = isGet[i % due.length];
        }
        tail -= head;
        head = 0;
        due = d;
        isGet = g;
      }
      due[tail % due.length] = t;
      isGet[tail % due.length] = get;
      tail++;
    }
  }

  /** Offers {@code rate}/s for {@code warmupSeconds + seconds}, measuring the last {@code seconds}. */
  public Report run(double rate, double warmupSeconds, double seconds) throws IOException {
    Histogram ok = new Histogram(3_600_000_000_000L, 3);
    Histogram rejects = new Histogram(3_600_000_000_000L, 3);
    long[] counts = new long[8]; // sent, ok, rejected, errors, within SLO, by reason: aqm, limit, budget
    SplittableRandom arrivals = new SplittableRandom(42);
    Conn[] conns = new Conn[connections];
    try (Selector selector = Selector.open()) {
      for (int i = 0; i < connections; i++) {
        SocketChannel ch = SocketChannel.open(server);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ch.configureBlocking(false);
        conns[i] = new Conn(ch);
        ch.register(selector, SelectionKey.OP_READ, conns[i]);
      }
      long start = System.nanoTime();
      long measureFrom = start + (long) (warmupSeconds * 1e9);
      long end = measureFrom + (long) (seconds * 1e9);
      double meanGap = 1e9 / rate;
      long next = start;
      int rr = 0;
      long now = start;
      while (now < end) {
        while (next <= now && next < end) {
          Conn c = conns[rr];
          rr = rr + 1 == connections ? 0 : rr + 1;
          int k = workload.nextKey();
          boolean get = workload.nextOp() == VarWorkload.Op.GET;
          if (c.out.remaining() < 20_000) {
            ByteBuffer bigger = ByteBuffer.allocate(c.out.capacity() * 2);
            c.out.flip();
            bigger.put(c.out);
            c.out = bigger;
          }
          if (get) {
            c.out.put(GET).put(workload.key(k)).put(CRLF);
          } else {
            encodeSet(c.out, k);
          }
          c.push(next, get);
          if (next >= measureFrom) {
            counts[0]++;
          }
          next += (long) (-Math.log(1 - arrivals.nextDouble()) * meanGap);
        }
        for (Conn c : conns) {
          if (c.out.position() > 0) {
            c.out.flip();
            c.ch.write(c.out);
            c.out.compact();
          }
        }
        if (selector.selectNow() > 0) {
          now = System.nanoTime();
          for (SelectionKey key : selector.selectedKeys()) {
            Conn c = (Conn) key.attachment();
            int n = c.ch.read(c.in);
            if (n < 0) {
              throw new IOException("server closed a connection");
            }
            c.in.flip();
            parse(c, now, measureFrom, ok, rejects, counts);
            c.in.compact();
          }
          selector.selectedKeys().clear();
        }
        now = System.nanoTime();
      }
      long unanswered = 0;
      for (Conn c : conns) {
        for (int i = c.head; i < c.tail; i++) {
          if (c.due[i % c.due.length] >= measureFrom) {
            unanswered++;
          }
        }
        c.ch.close();
      }
      return new Report(rate, seconds, counts[0], counts[1], counts[2], counts[3], unanswered, ok,
          rejects, sloNanos, counts[4], counts[5], counts[6], counts[7]);
    }
  }

  private void parse(Conn c, long now, long measureFrom, Histogram ok, Histogram rejects,
      long[] counts) throws IOException {
    ByteBuffer in = c.in;
    while (true) {
      if (c.skip > 0) {
        int n = (int) Math.min(c.skip, in.remaining());
        in.position(in.position() + n);
        c.skip -= n;
        if (c.skip > 0) {
          return;
        }
      }
      int eol = -1;
      for (int i = in.position(); i + 1 < in.limit(); i++) {
        if (in.get(i) == '\r' && in.get(i + 1) == '\n') {
          eol = i;
          break;
        }
      }
      if (eol < 0) {
        return;
      }
      int start = in.position();
      int len = eol - start;
      in.position(eol + 2);
      if (c.head == c.tail) {
        throw new IOException("a reply with no request outstanding");
      }
      byte b0 = in.get(start);
      if (b0 == 'V') { // VALUE <key> <flags> <bytes>
        int sp = eol - 1;
        while (in.get(sp) != ' ') {
          sp--;
        }
        long bytes = 0;
        for (int i = sp + 1; i < eol; i++) {
          bytes = bytes * 10 + (in.get(i) - '0');
        }
        c.skip = bytes + 2;
        c.sawValue = true;
        continue;
      }
      int slot = c.head % c.due.length;
      long due = c.due[slot];
      c.head++;
      c.sawValue = false;
      if (due < measureFrom) {
        continue;
      }
      long latency = Math.max(0, now - due);
      if (b0 == 'E' && len == 3 || b0 == 'S' && len == 6 && in.get(start + 1) == 'T') { // END, STORED
        counts[1]++;
        ok.recordValue(latency);
        if (latency <= sloNanos) {
          counts[4]++;
        }
      } else if (b0 == 'S' && len > 25 && in.get(start + 13) == 'o') { // SERVER_ERROR overloaded (
        counts[2]++;
        rejects.recordValue(latency);
        switch (in.get(start + 25)) { // the reason's first letter
          case 'q' -> counts[5]++; // queueing delay (AQM)
          case 'c' -> counts[6]++; // concurrency limit
          default -> counts[7]++; // lock queue exceeds budget
        }
      } else {
        counts[3]++;
      }
    }
  }

  /** {@code ./spillway kv-load --port P --rate R[,R2...] [--seconds S] [--warmup S] [--connections C] [--set-share X] [--slo-us U]}. */
  public static void main(String[] args) throws Exception {
    String host = "127.0.0.1";
    int port = 11211;
    String rates = "50000";
    double seconds = 10;
    double warmup = 2;
    int connections = 64;
    double setShare = 0.1;
    long slo = 110_000;
    boolean preload = true;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--no-preload")) {
        preload = false;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(a + " needs a value");
      }
      String v = args[++i];
      switch (a) {
        case "--host" -> host = v;
        case "--port" -> port = Integer.parseInt(v);
        case "--rate" -> rates = v;
        case "--seconds" -> seconds = Double.parseDouble(v);
        case "--warmup" -> warmup = Double.parseDouble(v);
        case "--connections" -> connections = Integer.parseInt(v);
        case "--set-share" -> setShare = Double.parseDouble(v);
        case "--slo-us" -> slo = Long.parseLong(v) * 1000;
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    MemcacheLoad load = new MemcacheLoad(new InetSocketAddress(host, port), connections, setShare, 1, slo);
    if (preload) {
      load.preload();
    }
    for (String r : rates.split(",")) {
      System.out.println(load.run(Double.parseDouble(r.trim()), warmup, seconds).line());
    }
  }
}
