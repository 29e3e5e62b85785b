package io.spillway.lucene;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Ticker;
import io.spillway.baselines.Seda;
import io.spillway.baselines.SedaConfig;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.Protego;
import io.spillway.credit.ProtegoConfig;
import io.spillway.credit.Spillway;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import java.io.IOException;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The search service as a process runs it: the corpus indexed at start-up, {@link SearchService}
 * on a gRPC (Netty) server, protected by Spillway or not, and the {@link UpdateStream} re-indexing
 * documents beside the searches.
 *
 * <h2>Overload control</h2>
 *
 * <p>{@link Protection#SPILLWAY} (the default) protects the server exactly as Spillway's gRPC
 * quick start does ({@code SpillwayGrpc.server().slo(target).install(builder)}): delay-based AQM
 * and an adaptive concurrency limit at admission, for clients that know nothing of Spillway (ghz)
 * and Spillway-aware ones alike, and a queueing budget in scope of every admitted call (the
 * target or its gRPC deadline, whichever is nearer, less the p99 service time, protego-nsdi23
 * §3.2), so
 * the shard and cache locks refuse a call early and the search stops when its budget does. The
 * target defaults to 40 ms, the target delay §5.2 set for Lucene. {@link Protection#PROTEGO},
 * {@link Protection#BREAKWATER} and {@link Protection#SEDA}, the schemes protego-nsdi23 §5.2
 * compares, are installed the same way with their own scheme ({@code SpillwayGrpc.server(scheme)}),
 * each with the parameters §5.1 derives from the target (see {@link Protection}). {@link
 * Protection#NONE} is the same service on a plain gRPC server with a fixed pool as large as the
 * processors: no budgets, so the locks are plain locks and searches run to the end.
 *
 * <p>Thread-safe; {@link #start} and {@link #close} once each.
 */
public final class LuceneServer implements AutoCloseable {

  /**
   * What protects the service: one of the schemes protego-nsdi23 §5 compares (Protego, Breakwater,
   * SEDA, none), or Spillway's default. Every scheme but {@link #NONE} is installed through
   * overload-grpc ({@code SpillwayGrpc.server(scheme)}) and has its clients' gate of the same
   * scheme ({@link #scheme}: {@code SpillwayGrpc.client(scheme)}, {@code ./spillway lucene load
   * --aware}), and every parameter is derived from the service's target delay ({@code
   * --target-ms}) as §5.1 tunes each system.
   *
   * <h3>Parameters (protego-nsdi23 §5.1, "Parameter settings")</h3>
   *
   * <p>The network RTT the credit schemes take is a tenth of the target, the unloaded
   * request-to-response time where the target is set by §5.1's rule ({@code 10 × (mean service +
   * RTT)}): 1.2 ms for the 12 ms target of the sockets runs, against 1.16 ms measured at 400 rps
   * (docs/results/lucene.md §3). It is Breakwater's control period and Protego's first estimate of
   * its end-to-end RTT, as examples-kv's {@code FrameScheme} sets them.
   *
   * <ul>
   *   <li>{@link #BREAKWATER}: d_t 40 % and the AQM drop threshold 80 % of the target, §5.1's
   *       rule for Breakwater on every workload ({@code BreakwaterConfig.forSlo(target, target/10)}),
   *       the paper's defaults otherwise (α 0.1 %, β 2 %, the client queue timeout half the
   *       target).
   *   <li>{@link #PROTEGO}: the target as Protego's target delay ({@code ProtegoConfig.forSlo}: t_e
   *       10 %, t_d 100 %, a = 0.1 % of the sessions and at least 1, d 2 %, an iteration every four
   *       end-to-end RTTs), and ASQM: a call's queueing budget is the target less the p99 service
   *       time (§3.2), checked before it queues for a worker (the CPU's run queue: a call the
   *       server's queueing delay would already outlast is refused there, overload-grpc's
   *       {@code budgetedRunQueue}), spent at the shard and cache locks and bounding the search
   *       (see "Budgets" for calls that bring a deadline).
   *   <li>{@link #SEDA}: see {@link #sedaConfig}.
   *   <li>{@link #SPILLWAY}: {@code Spillway.forSlo(target)}, the library's default, with the same
   *       budgets as Protego.
   * </ul>
   *
   * <h3>Budgets</h3>
   *
   * <p>{@link #PROTEGO} and {@link #SPILLWAY} put a budget in scope of every admitted call ({@link
   * #targetBudgets}): from its Spillway header, else the server-side target or its gRPC
   * deadline, whichever is nearer (overload-grpc's {@code SpillwayServerInterceptor}). So a call
   * with the load generator's 1 s deadline gets Protego's own budget, from the target, as a call
   * without a deadline does; Protego's clients send no budget header. {@link #BREAKWATER} and
   * {@link #SEDA} have no server-side target: the paper's Breakwater and SEDA have no lock budgets
   * (§5.2: Breakwater lets the mutexes' queues grow, SEDA only slows its clients), so a call without a
   * deadline has no budget and waits at the locks and searches to the end as under {@link #NONE}.
   * A call with a deadline still gets the budget its deadline leaves ({@code deadline − p99
   * service}), as it does under any scheme installed through overload-grpc: its answer after the
   * deadline would be wasted work. With the load generator's 1 s deadline that budget is about
   * 1 s, and in the sockets runs it refused nothing under either scheme.
   */
  public enum Protection {
    /** Spillway's default scheme, with budgets at the locks and in the search. */
    SPILLWAY,
    /** Protego's credits (performance-driven admission, §3.1) and ASQM budgets (§3.2). */
    PROTEGO,
    /** Breakwater's credits, demand speculation and delay-based AQM (breakwater-osdi20 §3). */
    BREAKWATER,
    /** SEDA's per-client rate control on the p99 response time; the server admits everything. */
    SEDA,
    /** Nothing: a plain gRPC server. */
    NONE;

    /** The names {@link #parse} knows, the default first. */
    static final String KNOWN = java.util.Arrays.stream(values())
        .map(p -> p.name().toLowerCase(java.util.Locale.ROOT) + (p == SPILLWAY ? " (default)" : ""))
        .collect(java.util.stream.Collectors.joining(", "));

    /** The protection called {@code name}, any case ({@code spillway}, {@code none}, ...). */
    public static Protection parse(String name) {
      for (Protection p : values()) {
        if (p.name().equalsIgnoreCase(name)) {
          return p;
        }
      }
      throw new IllegalArgumentException("unknown scheme '" + name + "'; known: " + KNOWN);
    }

    /**
     * Whether calls get a queueing budget from the server-side target when they bring neither a
     * budget nor a deadline (Protego's ASQM, §3.2; see the enum's javadoc, "Budgets").
     */
    public boolean targetBudgets() {
      return this == SPILLWAY || this == PROTEGO;
    }

    /**
     * The scheme for a service whose target delay is {@code targetNanos}, as the server installs
     * it; {@code null} for {@link #NONE}. SEDA's clients need {@link #scheme(long, double)}.
     */
    public OverloadScheme scheme(long targetNanos) {
      return scheme(targetNanos, 0);
    }

    /**
     * The scheme for a service whose target delay is {@code targetNanos}, with SEDA's clients
     * starting at {@code clientShareRps} requests per second each (the server's capacity ÷ the
     * clients; 0 if unknown, as on the server, where SEDA admits everything and its rates mean
     * nothing); {@code null} for {@link #NONE}. Server and clients built from the same target
     * have the same parameters.
     */
    public OverloadScheme scheme(long targetNanos, double clientShareRps) {
      if (targetNanos <= 0) {
        throw new IllegalArgumentException("target must be positive: " + targetNanos + " ns");
      }
      long rtt = Math.max(1_000, targetNanos / 10);
      return switch (this) {
        case SPILLWAY -> Spillway.forSloNanos(targetNanos);
        case PROTEGO -> Protego.of(ProtegoConfig.forSlo(targetNanos, rtt));
        case BREAKWATER -> Breakwater.of(BreakwaterConfig.forSlo(targetNanos, rtt));
        case SEDA -> Seda.of(sedaConfig(targetNanos, clientShareRps));
        case NONE -> null;
      };
    }
  }

  /**
   * SEDA for a service whose target delay is {@code targetNanos}, for clients whose fair share of
   * the capacity is {@code clientShareRps} each (0 if unknown: the server's copy, whose rates mean
   * nothing since SEDA's server admits everything).
   *
   * <p>§5.2 ran SEDA on Lucene with timeout 1 s, adj_i 0.1 and adj_d 1.3, for a server of about
   * 600 rps at the lock bound and 1,000 clients: 0.6 rps a client, so adj_i was a sixth of a
   * client's share per update, and the updates 25 targets apart. This service serves thousands of
   * rps to eight clients, and scenarios/lucene-protego.conf found §5.2's values too slow for it
   * (SEDA stuck where it starts: 0.51 × capacity at 1×, 0.15 × at 2×); it tunes SEDA as §5.1
   * tunes every system, by a sweep for the best goodput starting from §5.2's values, with the
   * clients starting at a fair share ({@code seda.init_rps}), and keeps faster, smaller steps
   * (timeout 10 ms, adj_i 2 rps a client, adj_d 1.1). The same method on sockets (the sweep in
   * docs/results/lucene/sockets-schemes/seda-sweep.txt, 12 ms target, eight clients) kept:
   *
   * <ul>
   *   <li>timeout = the target (12 ms; 1.2 ms, 76 ms, 120 ms and §5.2's 1 s did worse): an update
   *       about every target, as often as a response time can tell anything new;
   *   <li>adj_i = a tenth of the fair share (28 rps for 2,223 rps over eight clients; a thirtieth
   *       and a fifth did worse): back to a fair share within ten updates of a cut;
   *   <li>adj_d = 1.1, the simulator's;
   *   <li>the 99th percentile steered to the target itself, which is SEDA's own default (Welsh and
   *       Culler steer to the service's response-time target; §5.1 takes SEDA's defaults for all
   *       but the three above). The simulator keeps {@code SedaConfig.forSlo}'s 40 %, Breakwater's
   *       µs-scale tuning; on sockets, at 40 % (4.8 ms) the clients got under 170 responses/s
   *       within the target at 2× in 9 of 12 sweep runs, against 724 and 740 in both runs at the
   *       target;
   *   <li>each client starting at a fair share, as the simulator's.
   * </ul>
   *
   * <p>The rest is {@code SedaConfig.forSlo}'s: nreq 100, a floor of 2 rps, a 4-request bucket, the
   * client queue timeout half the target.
   */
  static SedaConfig sedaConfig(long targetNanos, double clientShareRps) {
    SedaConfig c = SedaConfig.forSlo(targetNanos, 1).withTarget(targetNanos)
        .withTimeout(targetNanos).withAdjD(1.1);
    if (clientShareRps > 0) {
      c = c.withInitialRate(clientShareRps).withAdjI(clientShareRps / 10);
    }
    return c;
  }

  private final Builder config;
  private ShardedIndex index;
  private SearchEngine engine;
  private Server server;
  private SpillwayGrpcServer spillway;
  private ExecutorService pool;
  private ScheduledExecutorService updater;
  private UpdateStream updates;
  private boolean closed;

  private LuceneServer(Builder config) {
    this.config = config;
  }

  /**
   * A builder: port 50051, the whole corpus in four shards, 2,000 warm-up queries, 100 documents
   * re-indexed per second, Spillway with a 40 ms target.
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Indexes the corpus, starts serving and starts the updates; returns this server. If it fails
   * (the port is taken, say), what it had set up is closed before the exception propagates: the
   * caller has no server to close.
   */
  public synchronized LuceneServer start() throws IOException {
    if (server != null || closed) {
      throw new IllegalStateException(closed ? "closed" : "already started");
    }
    try {
      startServing();
    } catch (IOException | RuntimeException | Error e) {
      try {
        close();
      } catch (RuntimeException | Error suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    return this;
  }

  private void startServing() throws IOException {
    Corpus corpus = Corpus.wordNet(config.docs);
    index = ShardedIndex.build(corpus, config.shards, config.ticker);
    engine = new SearchEngine(index, config.ticker, config.boundedSearches);
    warmUp();
    long period = 0;
    if (config.updatesPerSecond > 0) {
      UpdateSchedule schedule = UpdateSchedule.of(config.updatesPerSecond, config.shards);
      updates = new UpdateStream(index, schedule.batch(), config.seed);
      period = schedule.periodNanos();
      // Before serving, as the query warm-up: the first batches after the build make the writer
      // merge the build's segments, and a near-real-time reopen waits for such merges (up to
      // IndexWriterConfig's 500 ms merge-on-refresh) under the shard lock, a one-off second-long
      // stall for the first clients that would also set Spillway's p99 service estimate to it.
      long refreshStart = config.ticker.read();
      for (int i = 0; i < WARM_UPDATE_ROUNDS * config.shards; i++) {
        updates.applyNext();
      }
      warmRefreshNanos = config.ticker.read() - refreshStart;
    }
    ServerBuilder<?> builder = ServerBuilder.forPort(config.port).addService(new SearchService(engine));
    OverloadScheme scheme = config.protection.scheme(config.target.toNanos());
    if (scheme != null) {
      SpillwayGrpcServer.Builder protect = SpillwayGrpc.server(scheme).ticker(config.ticker);
      if (config.protection.targetBudgets()) {
        protect.slo(config.target); // the budget of calls with neither a budget nor a deadline
      }
      // Protego's ASQM covers the run queue as well as the locks (§3.2); Spillway's default steers
      // that queue with its AQM instead
      protect.budgetedRunQueue(config.protection == Protection.PROTEGO);
      if (config.threads > 0) {
        protect.parallelism(config.threads);
      }
      spillway = protect.install(builder);
    } else {
      pool = Executors.newFixedThreadPool(config.threads > 0 ? config.threads
          : Runtime.getRuntime().availableProcessors());
      builder.executor(pool);
    }
    server = builder.build().start();
    if (updates != null) {
      updater = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lucene-updates");
        t.setDaemon(true);
        return t;
      });
      Runnable batch = config.updateBatch != null ? config.updateBatch : updates::applyNext;
      updater.scheduleAtFixedRate(() -> applyUpdates(batch), period, period,
          TimeUnit.NANOSECONDS);
    }
  }

  /**
   * Runs {@code warmup} queries of the heavy mix before serving, with no budget, as Solr runs its
   * {@code firstSearcher} warming queries: a cold JVM's first searches are interpreted and load
   * classes, and would take several times the target, so the first clients would see their
   * searches cancelled for the JIT's sake. It also gives the p99 search time its first samples.
   */
  private void warmUp() {
    if (config.warmup == 0) {
      return;
    }
    long start = config.ticker.read();
    QueryMix mix;
    try (ShardedIndex.View view = index.acquire()) {
      mix = QueryMix.heavy(view.reader(), index.corpus());
    }
    SplittableRandom random = new SplittableRandom(config.seed);
    for (int i = 0; i < config.warmup; i++) {
      try {
        engine.search(mix.next(random), 10);
      } catch (InvalidQueryException e) {
        throw new IllegalStateException("the query mix made an invalid query", e);
      }
    }
    warmupNanos = config.ticker.read() - start;
  }

  private long warmupNanos;
  private long warmRefreshNanos;
  /** Update batches per shard applied before serving. */
  private static final int WARM_UPDATE_ROUNDS = 8;

  /** The update stream's batches: {@code batch} documents every {@code periodNanos}. */
  record UpdateSchedule(int batch, long periodNanos) {

    /**
     * The schedule of {@code updatesPerSecond} documents a second over {@code shards} shards: a
     * batch every shard's share of a second or more often (each shard is refreshed at least once
     * a second when there are documents enough), and the period from the batch, so that the
     * batches add up to the rate asked for even when it is not a multiple of the shards.
     */
    static UpdateSchedule of(int updatesPerSecond, int shards) {
      int ticksPerSecond = Math.min(shards, updatesPerSecond);
      int batch = Math.max(1, updatesPerSecond / ticksPerSecond);
      return new UpdateSchedule(batch, TimeUnit.SECONDS.toNanos(batch) / updatesPerSecond);
    }
  }

  /**
   * Runs one scheduled update batch. A scheduled executor cancels a task's later runs, silently,
   * the first time it throws, so nothing may escape unrecorded: an exception is logged, counted
   * and the next batch runs on schedule (a batch is re-indexed whole or not at all under the
   * shard lock, {@link Shard#reindex}, and the next may succeed). An {@link Error} (out of memory,
   * a stack overflow, a failed assertion) is logged, counted and ends the update stream, and the
   * server reports itself failed ({@link #failure}): Lucene's writer treats such an error as
   * tragic and closes itself, so every later batch would fail too, and the process is in a state
   * nothing vouches for; a search service whose index silently stops changing is better stopped
   * and restarted ({@link LuceneMain} exits) than left serving.
   */
  private void applyUpdates(Runnable batch) {
    try {
      batch.run();
    } catch (RuntimeException e) {
      updateFailures.increment();
      LOG.log(System.Logger.Level.WARNING, "update batch failed; the next runs on schedule", e);
    } catch (Error e) {
      updateFailures.increment();
      LOG.log(System.Logger.Level.ERROR, "update batch failed with an error; the update stream"
          + " has stopped and the server has failed", e);
      failure.complete(e);
      throw e; // ends the schedule
    }
  }

  /** Update batches that threw, whether the stream went on or stopped. */
  public long updateFailures() {
    return updateFailures.sum();
  }

  /**
   * Completes with the {@link Error} that stopped the update stream if one does: the server still
   * answers searches, from an index that no longer changes, and should be stopped. Never completes
   * otherwise.
   */
  public CompletionStage<Throwable> failure() {
    return failure.minimalCompletionStage();
  }

  private final LongAdder updateFailures = new LongAdder();
  private final CompletableFuture<Throwable> failure = new CompletableFuture<>();

  private static final System.Logger LOG = System.getLogger(LuceneServer.class.getName());

  /** The port bound (useful with port 0). */
  public int port() {
    return server.getPort();
  }

  /** The index served. */
  public ShardedIndex index() {
    return index;
  }

  /** The engine behind the service. */
  public SearchEngine engine() {
    return engine;
  }

  /** One line about the index: documents, shards, segments and how long it took to build. */
  public String describeIndex() {
    return String.format(Locale.ROOT, "indexed %,d documents into %d shards (%d segments) in %.1f s;"
        + " warmed up with %,d queries in %.1f s (p99 search %.2f ms) and %d update batches in"
        + " %.1f s; scheme %s, %s threads, searches %s", index.corpus().size(),
        index.shardCount(), index.segments(), index.buildNanos() / 1e9, config.warmup,
        warmupNanos / 1e9, engine.p99SearchNanos() / 1e6,
        updates == null ? 0 : WARM_UPDATE_ROUNDS * config.shards, warmRefreshNanos / 1e9,
        config.protection.name().toLowerCase(Locale.ROOT),
        config.threads > 0 ? Integer.toString(config.threads)
            : Runtime.getRuntime().availableProcessors() + " (processors)",
        engine.boundedSearches() ? "stop when their budget does" : "run to the end (--cancel off)");
  }

  /** Stops serving and the updates and closes the index; closing again has no effect. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (updater != null) {
      updater.shutdown(); // no interrupt: a batch in progress ends cleanly, no further ones start
    }
    if (server != null) {
      if (spillway != null) {
        spillway.stopCreditStreams(); // or the graceful shutdown waits for the clients' streams
      }
      server.shutdown();
      try {
        if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
          server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (spillway != null) {
      spillway.close();
    }
    if (pool != null) {
      pool.shutdownNow();
    }
    if (updater != null) {
      try {
        updater.awaitTermination(5, TimeUnit.SECONDS); // a batch in progress finishes first
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (index != null) {
      try {
        index.close();
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "closing the index", e);
      }
    }
  }

  /** Configures a {@link LuceneServer}. Not thread-safe. */
  public static final class Builder {
    private int port = 50051;
    private Protection protection = Protection.SPILLWAY;
    private int docs = Corpus.WORDNET_SIZE;
    private int shards = 4;
    private Duration target = Duration.ofMillis(40);
    private int updatesPerSecond = 100;
    private long seed = 42;
    private int warmup = 2_000;
    private Ticker ticker = Ticker.system();
    private boolean boundedSearches = true;
    private int threads;
    private Runnable updateBatch;

    private Builder() { }

    /**
     * What each scheduled update runs, in place of the update stream's next batch (the warm-up
     * batches before serving are still the stream's): a test's way to make a batch fail.
     */
    Builder updateBatch(Runnable value) {
      updateBatch = Objects.requireNonNull(value, "updateBatch");
      return this;
    }

    /**
     * Threads that run searches: Spillway's carriers, or the plain server's pool; 0 (the default)
     * for as many as the processors available. More threads than cores time-share them, so a
     * thread holding a lock can be preempted while others wait for it: the paper's ten server
     * threads (protego-nsdi23 §5.1) on this machine's one server core.
     */
    public Builder threads(int value) {
      if (value < 0 || value > 1024) {
        throw new IllegalArgumentException("threads must be 0..1024: " + value);
      }
      threads = value;
      return this;
    }

    /**
     * Whether a search stops when its budget runs out (the default), or runs to the end with its
     * budget spent only at the locks (Protego's refusal at locks alone, §3.2).
     */
    public Builder boundedSearches(boolean value) {
      boundedSearches = value;
      return this;
    }

    /** The port to listen on, 0 for any free one. */
    public Builder port(int value) {
      if (value < 0 || value > 65_535) {
        throw new IllegalArgumentException("port must be 0..65535: " + value);
      }
      port = value;
      return this;
    }

    public Builder protection(Protection value) {
      protection = Objects.requireNonNull(value, "protection");
      return this;
    }

    /** Documents to index, at most the whole corpus (117,791). */
    public Builder docs(int value) {
      if (value < 1) {
        throw new IllegalArgumentException("docs must be positive: " + value);
      }
      docs = value;
      return this;
    }

    public Builder shards(int value) {
      if (value < 1 || value > 64) {
        throw new IllegalArgumentException("shards must be 1..64: " + value);
      }
      shards = value;
      return this;
    }

    /** The latency target the budgets are derived from (Protego's target delay). */
    public Builder target(Duration value) {
      if (value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("target must be positive: " + value);
      }
      target = value;
      return this;
    }

    /** Documents re-indexed per second by the update stream; 0 turns it off. */
    public Builder updatesPerSecond(int value) {
      if (value < 0) {
        throw new IllegalArgumentException("updates per second must not be negative: " + value);
      }
      updatesPerSecond = value;
      return this;
    }

    /** Queries run before serving (the heavy mix), 0 for none. */
    public Builder warmup(int value) {
      if (value < 0) {
        throw new IllegalArgumentException("warm-up queries must not be negative: " + value);
      }
      warmup = value;
      return this;
    }

    /** The seed of the update stream's choice of documents and of the warm-up queries. */
    public Builder seed(long value) {
      seed = value;
      return this;
    }

    public Builder ticker(Ticker value) {
      ticker = Objects.requireNonNull(value, "ticker");
      return this;
    }

    public LuceneServer build() {
      return new LuceneServer(this);
    }
  }
}
