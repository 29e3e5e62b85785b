package io.spillway.kv;

import io.spillway.api.RetryBudget;
import io.spillway.transport.OverloadRejectedException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.LongAdder;

/**
 * A KV client over replicas of one store, with Protego's retry to a replica (protego-nsdi23 §5.3;
 * docs/design.md, "A request's path on a client"): a request goes to the first replica, and if
 * that replica turns it away with a fast reject (its gate, a lock's budget, or the client queue's
 * own expiry, which Protego's client treats as a locally generated failure message), it is sent
 * once to the next replica, if the {@link RetryBudget} allows. At most one retry, never after an
 * answer or an error; each replica keeps its own {@link KvClient}, so its own sessions and credits
 * (credits are per backend). The retry waits in the next replica's client queue from the moment
 * it is retried, so that queue's timeout applies afresh; the latency a caller measures still
 * counts from its first arrival.
 *
 * <p>Which replica goes first: replica 0 for every request, as the paper's experiment sends every
 * request to server 1 and only the rejected ones to server 2. Protego's SLO for this setup is
 * twice the per-server target (§5.3), the time of one rejected attempt plus one served.
 *
 * <p>Replicas are not kept consistent with each other: a SET retried on replica 1 is stored there
 * only, as memcached at Facebook replicates (§5.3). Use it for data a miss does not break.
 *
 * <p>Thread-safe: operations may be called from any thread; futures complete on an event loop of
 * the replica that answered.
 */
public final class KvReplicaClient implements AutoCloseable {

  private final List<KvClient> replicas;
  private final RetryBudget budget;
  private final LongAdder calls = new LongAdder();
  private final LongAdder retries = new LongAdder();
  private final LongAdder retriesRefused = new LongAdder();

  /**
   * @param replicas at least two started clients, one per replica; closed with this client
   * @param budget the retry budget shared by every request of this client
   * @throws IllegalArgumentException with fewer than two replicas
   */
  public KvReplicaClient(List<KvClient> replicas, RetryBudget budget) {
    if (replicas.size() < 2) {
      throw new IllegalArgumentException("retry to a replica needs two replicas or more: " + replicas.size());
    }
    this.replicas = List.copyOf(replicas);
    this.budget = Objects.requireNonNull(budget, "budget");
  }

  /** As {@link KvClient#get(byte[])}. */
  public CompletableFuture<Optional<KvClient.Value>> get(byte[] key) {
    return get(key, replicas.get(0).ticker().read());
  }

  /** As {@link KvClient#get(byte[], long)}. */
  public CompletableFuture<Optional<KvClient.Value>> get(byte[] key, long arrivalNanos) {
    return call(KvFrameCodec.encode(KvFrameCodec.OP_GET, key, 0, 0, null), arrivalNanos)
        .thenApply(KvClient::decodeGet);
  }

  /** As {@link KvClient#set(byte[], int, int, byte[])}. */
  public CompletableFuture<Void> set(byte[] key, int flags, int exptime, byte[] value) {
    return set(key, flags, exptime, value, replicas.get(0).ticker().read());
  }

  /** As {@link KvClient#set(byte[], int, int, byte[], long)}. */
  public CompletableFuture<Void> set(byte[] key, int flags, int exptime, byte[] value, long arrivalNanos) {
    Objects.requireNonNull(value, "value");
    return call(KvFrameCodec.encode(KvFrameCodec.OP_SET, key, flags, exptime, value), arrivalNanos)
        .thenApply(KvClient::decodeSet);
  }

  /** As {@link KvClient#delete(byte[])}. */
  public CompletableFuture<Boolean> delete(byte[] key) {
    return call(KvFrameCodec.encode(KvFrameCodec.OP_DELETE, key, 0, 0, null), replicas.get(0).ticker().read())
        .thenApply(KvClient::decodeDelete);
  }

  /**
   * Sends to replica 0 and, after a fast reject the budget lets through, once to replica 1. The
   * future ends exactly once: with the answer of the attempt that counts, or with the reject of
   * the last attempt.
   */
  CompletableFuture<byte[]> call(byte[] request, long arrivalNanos) {
    calls.increment();
    budget.onCall();
    CompletableFuture<byte[]> result = new CompletableFuture<>();
    replicas.get(0).send(request, arrivalNanos).whenComplete((answer, failure) -> {
      if (failure == null) {
        result.complete(answer);
        return;
      }
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      if (!(cause instanceof OverloadRejectedException rejected)
          || !RetryBudget.isRetryable(rejected.status(), 0)) {
        result.completeExceptionally(cause);
        return;
      }
      if (!budget.tryRetry()) {
        retriesRefused.increment();
        result.completeExceptionally(cause);
        return;
      }
      retries.increment();
      replicas.get(1).send(request, replicas.get(1).ticker().read()).whenComplete((again, failedAgain) -> {
        if (failedAgain == null) {
          result.complete(again);
        } else {
          result.completeExceptionally(failedAgain instanceof CompletionException && failedAgain.getCause() != null
              ? failedAgain.getCause() : failedAgain);
        }
      });
    });
    return result;
  }

  /** Requests made (retries not counted). */
  public long calls() {
    return calls.sum();
  }

  /** Requests sent a second time, to the next replica. */
  public long retries() {
    return retries.sum();
  }

  /** Fast-rejected requests the retry budget did not let retry. */
  public long retriesRefused() {
    return retriesRefused.sum();
  }

  /** Closes every replica's client. */
  @Override
  public void close() {
    for (KvClient c : replicas) {
      c.close();
    }
  }
}
