package io.spillway.lucene;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.spillway.api.OverloadScheme;
import io.spillway.baselines.Seda;
import io.spillway.baselines.SedaConfig;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.lucene.proto.SearchGrpc;
import io.spillway.lucene.proto.SearchReply;
import io.spillway.lucene.proto.SearchRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.Histogram;

/**
 * An open-loop gRPC load generator for the search service: Poisson arrivals at a fixed rate over
 * a few channels, the queries of a file {@code ./spillway lucene --ghz-data FILE} wrote (the same
 * ones ghz sends), each call's latency measured from the time it was due (no coordinated
 * omission), client queueing included, as goodput counts it (docs/results/simulation.md, "Model"). Clients are plain (no
 * Spillway headers, as ghz) or Spillway-aware ({@code --aware}: one session per channel, a client
 * gate of the server's scheme, {@link #awareScheme}: Breakwater's and Protego's clients wait for
 * credits, SEDA's send at the rate their controller sets, as the papers' clients do). Also a
 * closed loop ({@code --closed N}) that keeps N calls outstanding, for capacity.
 *
 * <p>As protego-nsdi23 §5.1 runs its experiments, each level runs {@code --seconds} (default 8)
 * and counts the calls scheduled in its second half. Goodput counts answers within the target
 * delay ({@code --target-ms}); rejects are counted by the reason the server gave
 * ({@code spillway-status}); the drop rate is server rejects ÷ calls the server answered.
 *
 * <p>{@code --out DIR} appends each level to {@code DIR/records.jsonl} and rewrites {@code
 * DIR/results.json} from all of them, in the simulator's format, so {@code ./spillway report DIR}
 * draws the runs of several servers (schemes) side by side.
 *
 * <p>Every call carries a 1 s deadline ({@code --deadline-ms}), which bounds what a collapsed server
 * leaves outstanding; Spillway's server then budgets a call from its deadline. {@code
 * --deadline-ms 0} sends none, and the server budgets from its own target instead.
 *
 * <p>Run: {@code ./spillway lucene load --queries FILE --rates R1,R2,... [--port P]
 * [--target-ms T] [--seconds S] [--channels N] [--aware] [--deadline-ms D]
 * [--scheme NAME --capacity C --out DIR] [--seda TIMEOUT_MS,ADJ_I,ADJ_D[,TARGET_MS]]}
 * or {@code --closed N}; pinned to core 1. Calls are issued from the main thread (parked between
 * arrivals, never spinning), answers arrive on one Netty event loop. Not thread-safe.
 */
public final class LuceneLoad implements AutoCloseable {

  static final long DEADLINE_MS = 1_000;

  private final NioEventLoopGroup group = new NioEventLoopGroup(1);
  private final List<ManagedChannel> managed = new ArrayList<>();
  private final List<SpillwayClientInterceptor> sessions = new ArrayList<>();
  private final Channel[] channels;
  private final List<SearchRequest> requests;
  private final long targetNanos;
  /** Each call's deadline, 0 for none (the server then budgets from its own target). */
  long deadlineMillis = DEADLINE_MS;

  /**
   * @param scheme the scheme of the clients' gate, one session per channel ({@link #awareScheme}),
   *     or {@code null} for plain clients
   */
  LuceneLoad(int port, int channelCount, OverloadScheme scheme, List<SearchRequest> requests,
      long targetNanos) {
    if (requests.isEmpty()) {
      throw new IllegalArgumentException("no queries to send");
    }
    this.requests = requests;
    this.targetNanos = targetNanos;
    channels = new Channel[channelCount];
    for (int i = 0; i < channelCount; i++) {
      ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext()
          .eventLoopGroup(group).channelType(NioSocketChannel.class).directExecutor().build();
      managed.add(ch);
      if (scheme != null) {
        SpillwayClientInterceptor session = SpillwayGrpc.client(scheme).sloNanos(targetNanos)
            .build();
        sessions.add(session);
        channels[i] = ClientInterceptors.intercept(ch, session);
      } else {
        channels[i] = ch;
      }
    }
  }

  /**
   * What one level measured; latencies in nanoseconds.
   *
   * @param byReason server rejects per Spillway status code
   * @param issueLag how late the generator issued each counted call after the time it was due: a
   *     p99 near the latencies means the generator, not the server, set them
   */
  record Result(double offeredRps, double seconds, long issued, long ok, long good,
      long serverRejects, long clientRejects, long deadlines, long errors, Histogram okLatency,
      Histogram rejectLatency, long[] byReason, long targetNanos, Histogram issueLag) {

    double goodputRps() {
      return good / seconds;
    }

    double throughputRps() {
      return ok / seconds;
    }

    /** Server rejects ÷ calls the server answered; NaN when it answered none. */
    double dropRate() {
      return ratio(serverRejects, ok + serverRejects + errors);
    }

    String reasons() {
      StringBuilder b = new StringBuilder();
      for (io.spillway.api.Status s : io.spillway.api.Status.values()) {
        if (byReason[s.code()] > 0) {
          b.append(b.isEmpty() ? "" : " ").append(s.name().toLowerCase(Locale.ROOT)
              .replace("rejected_", "")).append('=').append(byReason[s.code()]);
        }
      }
      return b.isEmpty() ? "-" : b.toString();
    }

    String line() {
      return String.format(Locale.ROOT, "offered %.0f/s: ok %.0f/s, goodput %.0f/s (<= %.1f ms),"
              + " mean %.2f ms, p50 %.2f ms, p99 %.2f ms, drop %.1f %% (%s), reject p99 %.2f ms,"
              + " client rejects %d, deadline %d, errors %d, issue lag p99 %.2f ms",
          offeredRps, throughputRps(), goodputRps(), targetNanos / 1e6,
          okLatency.getTotalCount() == 0 ? 0 : okLatency.getMean() / 1e6, pct(okLatency, 50),
          pct(okLatency, 99), 100 * dropRate(), reasons(), pct(rejectLatency, 99), clientRejects,
          deadlines, errors, pct(issueLag, 99));
    }

    String json(String scheme, double capacity, String mix) {
      return String.format(Locale.ROOT, "{\"scheme\": \"%s\", \"mix\": \"%s\", \"demand\": %.4f,"
              + " \"capacity_rps\": %.1f, \"offered_rps\": %.1f, \"throughput_rps\": %.1f,"
              + " \"goodput_rps\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"slo_us\": %.1f,"
              + " \"drop_rate\": %s, \"reject_delay_us\": %.1f, \"expired_rate\": %s,"
              + " \"rejects\": \"%s\", \"deadline_exceeded\": %d, \"errors\": %d}",
          scheme, mix, capacity > 0 ? offeredRps / capacity : 0, capacity, offeredRps,
          throughputRps(), goodputRps(), pct(okLatency, 50) * 1e3, pct(okLatency, 99) * 1e3,
          targetNanos / 1e3, share(dropRate()),
          rejectLatency.getTotalCount() == 0 ? 0 : rejectLatency.getMean() / 1e3,
          share(ratio(clientRejects, issued)), reasons(), deadlines, errors);
    }
  }

  /**
   * {@code part ÷ whole}, NaN when {@code whole} is 0: a ratio over nothing has no value, where 0
   * would read as a measured 0 %.
   */
  static double ratio(long part, long whole) {
    return whole == 0 ? Double.NaN : (double) part / whole;
  }

  /** {@code v} with five decimals, or JSON's null for NaN, which the report shows as a dash. */
  static String share(double v) {
    return Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.5f", v);
  }

  private static double pct(Histogram h, double p) {
    return h.getTotalCount() == 0 ? 0 : h.getValueAtPercentile(p) / 1e6;
  }

  /** Outcomes of the calls scheduled in [from, to). */
  private final class Tally {
    final long from;
    final long to;
    final Histogram okLatency = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    final Histogram rejectLatency = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    final Histogram issueLag = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    final long[] byReason = new long[io.spillway.api.Status.values().length];
    final AtomicInteger outstanding = new AtomicInteger();
    long issued;
    long ok;
    long good;
    long serverRejects;
    long clientRejects;
    long deadlines;
    long errors;

    Tally(long from, long to) {
      this.from = from;
      this.to = to;
    }

    synchronized void answered(long scheduledAt, Status status, Metadata trailers, long now) {
      outstanding.decrementAndGet();
      if (scheduledAt - from < 0 || scheduledAt - to >= 0) {
        return;
      }
      long latency = Math.max(1, now - scheduledAt);
      switch (status.getCode()) {
        case OK -> {
          ok++;
          okLatency.recordValue(latency);
          if (latency <= targetNanos) {
            good++;
          }
        }
        case RESOURCE_EXHAUSTED -> {
          String code = trailers.get(SpillwayMetadata.STATUS);
          String why = String.valueOf(status.getDescription());
          if (why.startsWith("spillway: expired in the client")
              || why.startsWith("spillway: rejected in the client")) {
            clientRejects++;
          } else {
            serverRejects++;
            rejectLatency.recordValue(latency);
            if (code != null) {
              try {
                byReason[Integer.parseInt(code)]++;
              } catch (RuntimeException malformed) {
                errors++;
              }
            }
          }
        }
        case DEADLINE_EXCEEDED -> deadlines++;
        default -> errors++;
      }
    }

    synchronized Result result(double rps) {
      return new Result(rps, (to - from) / 1e9, issued, ok, good, serverRejects, clientRejects,
          deadlines, errors, okLatency.copy(), rejectLatency.copy(), byReason.clone(), targetNanos,
          issueLag.copy());
    }
  }

  /** Sends {@code request}; it is in {@code inFlight} until it closes. */
  private void call(Channel channel, SearchRequest request, Set<ClientCall<?, ?>> inFlight,
      Listener listener) {
    ClientCall<SearchRequest, SearchReply> call = channel.newCall(SearchGrpc.getSearchMethod(),
        deadlineMillis > 0 ? CallOptions.DEFAULT.withDeadlineAfter(deadlineMillis,
            TimeUnit.MILLISECONDS) : CallOptions.DEFAULT);
    inFlight.add(call);
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onClose(Status status, Metadata trailers) {
        inFlight.remove(call);
        listener.closed(status, trailers, System.nanoTime());
      }
    }, new Metadata());
    call.request(1);
    call.sendMessage(request);
    call.halfClose();
  }

  @FunctionalInterface
  private interface Listener {
    void closed(Status status, Metadata trailers, long now);
  }

  /**
   * How long the calls still in flight when a level ends are waited for: three deadlines, or three
   * of the default one for calls without a deadline. Those still unanswered then are cancelled
   * ({@link #cancelUnanswered}).
   */
  private long drainNanos() {
    return TimeUnit.MILLISECONDS.toNanos(3 * Math.max(deadlineMillis, DEADLINE_MS));
  }

  /**
   * Cancels the calls of {@code inFlight} once {@code outstanding} has not reached zero by
   * {@code until}, and waits (up to five seconds) for them to close: a call of a server that never
   * answers, and with no deadline, would otherwise be counted as nothing, or keep the level from
   * ending. A cancelled call counts as an error.
   */
  private static void cancelUnanswered(Set<ClientCall<?, ?>> inFlight, IntSupplier outstanding,
      long until) throws InterruptedException {
    while (outstanding.getAsInt() > 0 && System.nanoTime() - until < 0) {
      Thread.sleep(5);
    }
    if (outstanding.getAsInt() == 0) {
      return;
    }
    for (ClientCall<?, ?> call : List.copyOf(inFlight)) {
      call.cancel("no answer when the level ended", null);
    }
    long closed = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (outstanding.getAsInt() > 0 && System.nanoTime() - closed < 0) {
      Thread.sleep(5);
    }
  }

  /**
   * Poisson arrivals at {@code rps} for {@code seconds}, counting the calls scheduled in the second
   * half; waits for them to end (at most three deadlines, then cancels them: each counted call
   * ends in one of the counts).
   */
  Result openLoop(double rps, double seconds, long seed) throws InterruptedException {
    SplittableRandom random = new SplittableRandom(seed);
    long start = System.nanoTime();
    long total = (long) (seconds * 1e9);
    Tally tally = new Tally(start + total / 2, start + total);
    Set<ClientCall<?, ?>> inFlight = ConcurrentHashMap.newKeySet();
    double meanGap = 1e9 / rps;
    long next = start;
    long id = 0;
    while (next - tally.to < 0) {
      long wait = next - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait); // never spin: the answers' event loop shares this core
        continue;
      }
      long scheduled = next;
      tally.outstanding.incrementAndGet();
      call(channels[(int) (id % channels.length)], requests.get((int) (id % requests.size())),
          inFlight, (status, trailers, now) -> tally.answered(scheduled, status, trailers, now));
      if (next - tally.from >= 0) {
        long lag = Math.max(1, System.nanoTime() - scheduled);
        synchronized (tally) {
          tally.issued++;
          tally.issueLag.recordValue(lag);
        }
      }
      id++;
      next += (long) (-Math.log(1 - random.nextDouble()) * meanGap);
    }
    cancelUnanswered(inFlight, tally.outstanding::get, System.nanoTime() + drainNanos());
    return tally.result(rps);
  }

  /** {@code outstanding} calls always in flight for {@code seconds}; the OK rate of the second half. */
  double closedLoop(int outstanding, double seconds) throws InterruptedException {
    long start = System.nanoTime();
    long from = start + (long) (seconds * 1e9 / 2);
    long end = start + (long) (seconds * 1e9);
    AtomicLong done = new AtomicLong();
    AtomicInteger live = new AtomicInteger(outstanding);
    AtomicLong ids = new AtomicLong();
    Set<ClientCall<?, ?>> inFlight = ConcurrentHashMap.newKeySet();
    Runnable[] issue = new Runnable[1];
    issue[0] = () -> {
      if (System.nanoTime() - end >= 0) {
        live.decrementAndGet();
        return;
      }
      long id = ids.getAndIncrement();
      call(channels[(int) (id % channels.length)], requests.get((int) (id % requests.size())),
          inFlight, (status, trailers, now) -> {
            if (status.isOk() && now - from >= 0 && now - end < 0) {
              done.incrementAndGet();
            }
            issue[0].run();
          });
    };
    for (int i = 0; i < outstanding; i++) {
      issue[0].run();
    }
    cancelUnanswered(inFlight, live::get, end + drainNanos());
    return done.get() / ((end - from) / 1e9);
  }

  @Override
  public void close() {
    for (SpillwayClientInterceptor s : sessions) {
      s.close();
    }
    for (ManagedChannel ch : managed) {
      ch.shutdownNow();
    }
    try {
      for (ManagedChannel ch : managed) {
        ch.awaitTermination(5, TimeUnit.SECONDS);
      }
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The protection the server runs, from the {@code --scheme} label of an aware run: the label
   * itself ({@code breakwater}), or its part before the first {@code -} ({@code spillway-aware});
   * {@link LuceneServer.Protection#SPILLWAY} without a label.
   *
   * @throws IllegalArgumentException naming the known schemes if neither is one, or for {@code
   *     none}, which has no client gate
   */
  static LuceneServer.Protection awareProtection(String label) {
    LuceneServer.Protection p = null;
    if (label == null) {
      p = LuceneServer.Protection.SPILLWAY;
    } else {
      for (String name : new String[] {label, label.split("-", 2)[0]}) {
        try {
          p = LuceneServer.Protection.parse(name);
          break;
        } catch (IllegalArgumentException notThis) {
          // try the prefix
        }
      }
    }
    if (p == null) {
      throw new IllegalArgumentException("--aware takes the server's scheme from --scheme NAME or"
          + " NAME-anything; '" + label + "' names none of: " + LuceneServer.Protection.KNOWN);
    }
    if (p == LuceneServer.Protection.NONE) {
      throw new IllegalArgumentException("--aware with scheme none: a server with no scheme has no"
          + " client gate; run without --aware");
    }
    return p;
  }

  /**
   * The aware clients' scheme: {@code protection}'s for the target, SEDA's clients starting at a
   * fair share, {@code capacityRps ÷ channels} (required for SEDA), and {@code sedaTuning} (timeout
   * in ms, adj_i, adj_d and optionally the p99 target in ms; {@code null} for {@link
   * LuceneServer#sedaConfig}'s) in place of SEDA's tuned values, for a tuning sweep.
   */
  static OverloadScheme awareScheme(LuceneServer.Protection protection, long targetNanos,
      double capacityRps, int channels, double[] sedaTuning) {
    if (protection != LuceneServer.Protection.SEDA) {
      return protection.scheme(targetNanos);
    }
    if (!(capacityRps > 0)) {
      throw new IllegalArgumentException("SEDA's clients start at a fair share of the capacity:"
          + " give --capacity RPS");
    }
    SedaConfig c = LuceneServer.sedaConfig(targetNanos, capacityRps / channels);
    if (sedaTuning != null) {
      c = c.withTimeout(Math.round(sedaTuning[0] * 1e6)).withAdjI(sedaTuning[1])
          .withAdjD(sedaTuning[2]);
      if (sedaTuning.length > 3) {
        c = c.withTarget(Math.round(sedaTuning[3] * 1e6));
      }
    }
    return Seda.of(c);
  }

  private static final Pattern REQUEST =
      Pattern.compile("\\{\"query\":\"((?:[^\"\\\\]|\\\\.)*)\",\"k\":(\\d+)}");

  /** The requests of a file {@link LuceneMain#writeGhzData} wrote. */
  static List<SearchRequest> readRequests(Path file) throws IOException {
    List<SearchRequest> out = new ArrayList<>();
    Matcher m = REQUEST.matcher(Files.readString(file, StandardCharsets.UTF_8));
    while (m.find()) {
      out.add(SearchRequest.newBuilder().setQuery(unescape(m.group(1)))
          .setK(Integer.parseInt(m.group(2))).build());
    }
    return out;
  }

  /** Reverses {@link LuceneMain#json}. */
  static String unescape(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '\\' || i + 1 >= s.length()) {
        b.append(c);
        continue;
      }
      char n = s.charAt(++i);
      if (n == 'u' && i + 4 < s.length()) {
        b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
        i += 4;
      } else {
        b.append(n);
      }
    }
    return b.toString();
  }

  /**
   * Adds {@code record} to DIR/records.jsonl and rewrites DIR/results.json from every line. A record
   * of the same scheme, mix and demand as an earlier one replaces it: a level run again is a new
   * measurement of the same point, and two rows for one point are a report's error, not a series.
   */
  static void append(Path dir, String record, double capacity, long targetNanos, String name)
      throws IOException {
    Files.createDirectories(dir);
    Path lines = dir.resolve("records.jsonl");
    List<String> kept = new java.util.ArrayList<>();
    if (Files.exists(lines)) {
      String point = point(record);
      for (String l : Files.readAllLines(lines, StandardCharsets.UTF_8)) {
        if (!l.isBlank() && (point == null || !point.equals(point(l)))) {
          kept.add(l);
        }
      }
    }
    kept.add(record);
    Files.writeString(lines, String.join("\n", kept) + "\n", StandardCharsets.UTF_8);
    List<String> all = kept;
    String json = String.format(Locale.ROOT, "{%n  \"scenario\": {\"name\": \"%s\", \"description\":"
            + " \"./spillway lucene on core 0, ./spillway lucene load on core 1 (sockets)\","
            + " \"slo_us\": \"%.1f\"},%n  \"capacity_rps\": %.1f,%n  \"capacity_measured\": true,%n"
            + "  \"records\": [%n    %s%n  ]%n}%n", name, targetNanos / 1e3, capacity,
        String.join(",\n    ", all));
    Files.writeString(dir.resolve("results.json"), json, StandardCharsets.UTF_8);
  }

  private static final java.util.regex.Pattern POINT = java.util.regex.Pattern.compile(
      "^\\{\"scheme\": (\"(?:[^\"\\\\]|\\\\.)*\"), \"mix\": (\"(?:[^\"\\\\]|\\\\.)*\"), \"demand\": ([0-9.]+),");

  /**
   * The scheme, mix and demand of a record {@link Result#json} wrote, or null for a line of another
   * form or a demand of 0 (no capacity given: levels cannot be told apart, so none is replaced).
   */
  static String point(String record) {
    java.util.regex.Matcher m = POINT.matcher(record);
    if (!m.find() || Double.parseDouble(m.group(3)) == 0) {
      return null;
    }
    return m.group(1) + " " + m.group(2) + " " + m.group(3);
  }

  public static void main(String[] args) throws Exception {
    int port = 50051;
    Path queries = null;
    List<Double> rates = new ArrayList<>();
    double seconds = 8;
    double targetMs = 40;
    int channels = 8;
    boolean aware = false;
    int closed = 0;
    String scheme = null;
    String mix = "single";
    double capacity = 0;
    Path out = null;
    long seed = 1;
    long deadline = DEADLINE_MS;
    double[] sedaTuning = null;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("--aware")) {
        aware = true;
        continue;
      }
      if (i + 1 >= args.length) {
        usage("missing value after " + flag);
      }
      String v = args[++i];
      switch (flag) {
        case "--port" -> port = Integer.parseInt(v);
        case "--queries" -> queries = Path.of(v);
        case "--rates" -> {
          for (String r : v.split(",")) {
            rates.add(Double.parseDouble(r.strip()));
          }
        }
        case "--seconds" -> seconds = Double.parseDouble(v);
        case "--target-ms" -> targetMs = Double.parseDouble(v);
        case "--channels" -> channels = Integer.parseInt(v);
        case "--closed" -> closed = Integer.parseInt(v);
        case "--scheme" -> scheme = v;
        case "--mix" -> mix = v;
        case "--capacity" -> capacity = Double.parseDouble(v);
        case "--out" -> out = Path.of(v);
        case "--seed" -> seed = Long.parseLong(v);
        case "--deadline-ms" -> deadline = Long.parseLong(v);
        case "--seda" -> {
          String[] parts = v.split(",");
          if (parts.length != 3 && parts.length != 4) {
            usage("--seda takes TIMEOUT_MS,ADJ_I,ADJ_D[,TARGET_MS]");
          }
          sedaTuning = new double[parts.length];
          for (int p = 0; p < parts.length; p++) {
            sedaTuning[p] = Double.parseDouble(parts[p]);
          }
        }
        default -> usage("unknown option " + flag);
      }
    }
    if (queries == null || (rates.isEmpty() && closed == 0)) {
      usage("give --queries FILE and --rates R,... or --closed N");
    }
    long target = Math.round(targetMs * 1e6);
    OverloadScheme clientScheme = null;
    if (aware) {
      try {
        clientScheme = awareScheme(awareProtection(scheme), target, capacity, channels, sedaTuning);
      } catch (IllegalArgumentException e) {
        usage(e.getMessage());
      }
      System.err.println("spillway lucene load: aware clients, " + clientScheme);
    }
    try (LuceneLoad load = new LuceneLoad(port, channels, clientScheme, readRequests(queries),
        target)) {
      load.deadlineMillis = deadline;
      if (closed > 0) {
        System.out.printf(Locale.ROOT, "closed loop, %d outstanding, %.0f s: %.0f ok/s%n", closed,
            seconds, load.closedLoop(closed, seconds));
        return;
      }
      for (double rps : rates) {
        Result r = load.openLoop(rps, seconds, seed++);
        System.out.println((scheme == null ? "" : scheme + " ") + r.line());
        if (out != null) {
          append(out, r.json(scheme == null ? "unnamed" : scheme, capacity, mix), capacity, target,
              out.getFileName().toString());
        }
      }
    }
  }

  private static void usage(String why) {
    System.err.println("spillway lucene load: " + why);
    System.err.println("usage: spillway lucene load --queries FILE (--rates R1,R2,... | --closed N)"
        + " [--port P] [--target-ms T] [--seconds S] [--channels N] [--aware] [--scheme NAME]"
        + " [--mix NAME] [--capacity C] [--out DIR] [--seed S] [--deadline-ms D (0: none)]"
        + " [--seda TIMEOUT_MS,ADJ_I,ADJ_D[,TARGET_MS]]");
    System.exit(2);
  }
}
