package io.spillway.kv;

import io.spillway.api.OverloadScheme;
import io.spillway.api.RetryBudget;
import io.spillway.api.Status;
import io.spillway.transport.OverloadRejectedException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * An open-loop load generator for the KV's native-frame port ({@link KvClient}), or for two
 * replicas through {@link KvReplicaClient} (protego-nsdi23 §5.3): Poisson arrivals at a fixed
 * rate, {@link VarWorkload}'s keys, sizes and SET share, each request's latency measured from the
 * time it was due (no coordinated omission; a request issued late by this thread is charged for
 * it). Every request ends once, as an answer, a reject (by status; with replicas, a reject is
 * the last attempt's), or an error; one still unanswered a second after the run is counted as
 * such.
 *
 * <p>{@code kv-frame-load --ports P1[,P2] --rate R[,R2...] [--seconds S] [--warmup S] [--sessions N]
 * [--set-share X] [--slo-us U] [--target-us T] [--scheme protego|breakwater|spillway|none] [--retry-share F]
 * [--no-preload]}: with two ports every request goes to P1 first and a fast reject is retried once
 * on P2. Run it on a core of its own. Not thread-safe: one run at a time.
 */
public final class KvFrameLoad {

  /** What one run measured. */
  record Report(double offeredRps, double seconds, long issued, long ok, long withinSlo,
      Map<Status, Long> rejected, long errors, long unanswered, long retries, Histogram okLatency,
      Histogram rejectLatency, long sloNanos) {

    long rejectedTotal() {
      return rejected.values().stream().mapToLong(Long::longValue).sum();
    }

    String line() {
      StringBuilder reasons = new StringBuilder();
      rejected.forEach((s, n) -> {
        if (n > 0) {
          reasons.append(reasons.isEmpty() ? "" : ", ").append(s.name().toLowerCase(Locale.ROOT)).append(' ').append(n);
        }
      });
      return String.format(Locale.ROOT,
          "offered %.0f/s: issued %d, ok %.0f/s, goodput %.0f/s (<= %d us), rejected %d (%.2f %%%s),"
              + " retried %d (%.2f %%), errors %d, unanswered %d, p50 %.1f us, p99 %.1f us, p99.9 %.1f us,"
              + " reject p99 %.1f us",
          offeredRps, issued, ok / seconds, withinSlo / seconds, sloNanos / 1000, rejectedTotal(),
          issued == 0 ? 0 : 100.0 * rejectedTotal() / issued, reasons.isEmpty() ? "" : ": " + reasons,
          retries, issued == 0 ? 0 : 100.0 * retries / issued, errors, unanswered,
          okLatency.getValueAtPercentile(50) / 1e3, okLatency.getValueAtPercentile(99) / 1e3,
          okLatency.getValueAtPercentile(99.9) / 1e3,
          rejectLatency.getTotalCount() == 0 ? 0 : rejectLatency.getValueAtPercentile(99) / 1e3);
    }
  }

  /** Sends one request: its key index, whether a GET, its value, and when it was due. */
  private interface Target {
    CompletableFuture<?> send(byte[] key, boolean get, byte[] value, long due);

    long retries();
  }

  private final Target target;
  private final VarWorkload workload;
  private final long sloNanos;
  private final byte[][] values = new byte[VarWorkload.KEYS][];

  private KvFrameLoad(Target target, double setShare, long sloNanos) {
    this.target = target;
    this.workload = new VarWorkload(1, setShare);
    this.sloNanos = sloNanos;
    for (int k = 0; k < VarWorkload.KEYS; k++) {
      values[k] = new byte[workload.valueLength(k)];
    }
  }

  /** Stores every key once on {@code client}, a window of requests at a time, so GETs hit. */
  static void preload(KvClient client, VarWorkload workload, byte[][] values) throws Exception {
    List<CompletableFuture<Void>> window = new ArrayList<>();
    for (int k = 0; k < VarWorkload.KEYS; k++) {
      window.add(client.set(workload.key(k), 0, 0, values[k]));
      if (window.size() == 256 || k == VarWorkload.KEYS - 1) {
        for (CompletableFuture<Void> f : window) {
          try {
            f.get(30, TimeUnit.SECONDS);
          } catch (java.util.concurrent.ExecutionException e) {
            // a fast reject during preload: the key stays absent, a later GET misses
          }
        }
        window.clear();
      }
    }
  }

  /** Offers {@code rate}/s for {@code warmupSeconds + seconds}, measuring the last {@code seconds}. */
  Report run(double rate, double warmupSeconds, double seconds) throws InterruptedException {
    Histogram ok = new Histogram(3_600_000_000_000L, 3);
    Histogram rejects = new Histogram(3_600_000_000_000L, 3);
    Map<Status, Long> rejected = new EnumMap<>(Status.class);
    long[] counts = new long[3]; // ok, within SLO, errors
    AtomicLong outstanding = new AtomicLong();
    Object lock = new Object();
    SplittableRandom arrivals = new SplittableRandom(42);
    long start = System.nanoTime();
    long measureFrom = start + (long) (warmupSeconds * 1e9);
    long end = measureFrom + (long) (seconds * 1e9);
    double meanGap = 1e9 / rate;
    long next = start;
    long issued = 0;
    long retriesAtMeasure = -1;
    while (next < end) {
      long now = System.nanoTime();
      if (next - now > 0) {
        // park, never spin: the client's event loops share this core, and a spinning issuer
        // would starve them; a request issued late by the timer's slack is charged for it
        LockSupport.parkNanos(next - now);
        continue;
      }
      while (next <= now && next < end) {
        long due = next;
        next += (long) (-Math.log(1 - arrivals.nextDouble()) * meanGap);
        int k = workload.nextKey();
        boolean get = workload.nextOp() == VarWorkload.Op.GET;
        boolean measured = due - measureFrom >= 0;
        if (measured) {
          if (retriesAtMeasure < 0) {
            retriesAtMeasure = target.retries();
          }
          issued++;
          outstanding.incrementAndGet();
        }
        CompletableFuture<?> f;
        try {
          f = target.send(workload.key(k), get, values[k], due);
        } catch (RuntimeException e) {
          f = CompletableFuture.failedFuture(e);
        }
        if (!measured) {
          continue;
        }
        f.whenComplete((answer, failure) -> {
          long latency = Math.max(1, System.nanoTime() - due);
          synchronized (lock) {
            if (failure == null) {
              counts[0]++;
              ok.recordValue(latency);
              if (latency <= sloNanos) {
                counts[1]++;
              }
            } else {
              Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                  ? failure.getCause() : failure;
              if (cause instanceof OverloadRejectedException r) {
                rejected.merge(r.status(), 1L, Long::sum);
                rejects.recordValue(latency);
              } else {
                counts[2]++;
              }
            }
          }
          outstanding.decrementAndGet();
        });
      }
    }
    long drainUntil = System.nanoTime() + 1_000_000_000L;
    while (outstanding.get() > 0 && System.nanoTime() - drainUntil < 0) {
      LockSupport.parkNanos(1_000_000);
    }
    synchronized (lock) {
      return new Report(rate, seconds, issued, counts[0], counts[1], new EnumMap<>(rejected), counts[2],
          outstanding.get(), retriesAtMeasure < 0 ? 0 : target.retries() - retriesAtMeasure,
          ok.copy(), rejects.copy(), sloNanos);
    }
  }

  public static void main(String[] args) throws Exception {
    String host = "127.0.0.1";
    String ports = "11311";
    String rates = "20000";
    double seconds = 5;
    double warmup = 2;
    int sessions = 16;
    double setShare = VarWorkload.SET_SHARE;
    long slo = 220_000;
    long target = 110_000;
    String scheme = "protego";
    double retryShare = 1;
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
        case "--ports" -> ports = v;
        case "--rate" -> rates = v;
        case "--seconds" -> seconds = Double.parseDouble(v);
        case "--warmup" -> warmup = Double.parseDouble(v);
        case "--sessions" -> sessions = Integer.parseInt(v);
        case "--set-share" -> setShare = Double.parseDouble(v);
        case "--slo-us" -> slo = Long.parseLong(v) * 1000;
        case "--target-us" -> target = Long.parseLong(v) * 1000;
        case "--scheme" -> scheme = v;
        case "--retry-share" -> retryShare = Double.parseDouble(v);
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    OverloadScheme overload = KvServer.FrameScheme.parse(scheme).scheme(target);
    List<KvClient> clients = new ArrayList<>();
    for (String p : ports.split(",")) {
      clients.add(KvClient.builder().host(host).port(Integer.parseInt(p.strip())).scheme(overload)
          .sessions(sessions).sloNanos(slo).start());
    }
    Target t;
    KvReplicaClient replicas = null;
    if (clients.size() == 1) {
      KvClient c = clients.get(0);
      t = new Target() {
        @Override
        public CompletableFuture<?> send(byte[] key, boolean get, byte[] value, long due) {
          return get ? c.get(key, due) : c.set(key, 0, 0, value, due);
        }

        @Override
        public long retries() {
          return 0;
        }
      };
    } else {
      KvReplicaClient r = new KvReplicaClient(clients, RetryBudget.of(retryShare));
      replicas = r;
      t = new Target() {
        @Override
        public CompletableFuture<?> send(byte[] key, boolean get, byte[] value, long due) {
          return get ? r.get(key, due) : r.set(key, 0, 0, value, due);
        }

        @Override
        public long retries() {
          return r.retries();
        }
      };
    }
    KvFrameLoad load = new KvFrameLoad(t, setShare, slo);
    if (preload) {
      for (KvClient c : clients) {
        preload(c, load.workload, load.values);
      }
    }
    for (String r : rates.split(",")) {
      System.out.println(load.run(Double.parseDouble(r.strip()), warmup, seconds).line());
    }
    if (replicas != null) {
      replicas.close();
    } else {
      clients.get(0).close();
    }
  }
}
