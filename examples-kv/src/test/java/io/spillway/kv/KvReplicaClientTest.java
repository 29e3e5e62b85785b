package io.spillway.kv;

import static io.spillway.kv.FrameSchemes.WAIT_SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.spillway.api.RetryBudget;
import io.spillway.api.Status;
import io.spillway.transport.OverloadRejectedException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Retry to a replica (protego-nsdi23 §5.3) on real sockets: replica 0 turns requests away fast,
 * the client sends them once to replica 1 as far as its retry budget allows, never a third time,
 * never after an answer; each replica's requests all end exactly once.
 */
@Timeout(120)
class KvReplicaClientTest {

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(WAIT_SECONDS, TimeUnit.SECONDS);
  }

  private static KvServer.Builder replica() {
    return KvServer.builder().host("127.0.0.1").port(-1).framePort(0).memoryMegabytes(8)
        .frameScheme(KvServer.FrameScheme.NONE);
  }

  private static KvClient client(KvServer server) throws Exception {
    return KvClient.builder().port(server.framePort()).sloNanos(10_000_000_000L).start();
  }

  /**
   * Replica 0 rejects everything. Budget: 2 tokens, a tenth per call, so of 25 calls made one
   * after the other the retries are calls 1 and 2 (the full bucket), then 11 and 21 (ten tenths
   * each): 4 stored on replica 1, 21 rejected with replica 0's status.
   */
  @Test
  void aFastRejectIsRetriedOnTheReplicaAsFarAsTheBudgetAllows() throws Exception {
    FrameSchemes.RejectAll rejectAll = new FrameSchemes.RejectAll();
    FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
    try (KvServer first = replica().frameSchemeWrapper(s -> rejectAll).build().start();
         KvServer second = replica().frameSchemeWrapper(leaks::wrap).build().start();
         KvReplicaClient client = new KvReplicaClient(List.of(client(first), client(second)),
             RetryBudget.of(0.1, 2))) {
      int stored = 0;
      int rejected = 0;
      for (int i = 0; i < 25; i++) {
        try {
          await(client.set(b("k" + i), i, 0, b("v" + i)));
          stored++;
        } catch (ExecutionException e) {
          OverloadRejectedException r = assertInstanceOf(OverloadRejectedException.class, e.getCause());
          assertEquals(Status.REJECTED_AQM, r.status());
          rejected++;
        }
      }
      assertEquals(4, stored);
      assertEquals(21, rejected);
      assertEquals(25, client.calls());
      assertEquals(4, client.retries());
      assertEquals(21, client.retriesRefused());
      assertEquals(25, rejectAll.seen.get(), "every call went to replica 0 first");
      assertEquals(4, second.store().items(), "the retried SETs are stored on replica 1 only");
      try (KvClient direct = KvClient.builder().port(second.framePort()).firstSessionId(1_000)
          .sloNanos(10_000_000_000L).start()) {
        for (int i : new int[] {0, 1, 10, 20}) {
          assertEquals(new KvClient.Value(i, b("v" + i)), await(direct.get(b("k" + i))).orElseThrow());
        }
      }
      leaks.assertEveryRequestEndedOnce();
    }
  }

  /** When the replica rejects too, that reject is final: no third attempt, whatever the budget. */
  @Test
  void theRetrysRejectIsFinal() throws Exception {
    FrameSchemes.RejectAll first = new FrameSchemes.RejectAll();
    FrameSchemes.RejectAll second = new FrameSchemes.RejectAll();
    try (KvServer a = replica().frameSchemeWrapper(s -> first).build().start();
         KvServer b = replica().frameSchemeWrapper(s -> second).build().start();
         KvReplicaClient client = new KvReplicaClient(List.of(client(a), client(b)), RetryBudget.of(1.0))) {
      for (int i = 0; i < 5; i++) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> await(client.get(b("k"))));
        assertEquals(Status.REJECTED_AQM, assertInstanceOf(OverloadRejectedException.class, e.getCause()).status());
      }
      assertEquals(5, first.seen.get());
      assertEquals(5, second.seen.get(), "one retry per call, never two");
      assertEquals(5, client.retries());
    }
  }

  /** An answer is never retried, a miss included; nor is a CLIENT_ERROR, which is not a reject. */
  @Test
  void answersAreNotRetried() throws Exception {
    FrameSchemes.LeakChecks firstLeaks = new FrameSchemes.LeakChecks();
    FrameSchemes.RejectAll second = new FrameSchemes.RejectAll();
    try (KvServer a = replica().frameSchemeWrapper(firstLeaks::wrap).build().start();
         KvServer b = replica().frameSchemeWrapper(s -> second).build().start();
         KvReplicaClient client = new KvReplicaClient(List.of(client(a), client(b)), RetryBudget.of(1.0))) {
      assertEquals(Optional.empty(), await(client.get(b("missing"))));
      await(client.set(b("k"), 5, 0, b("v")));
      assertEquals(new KvClient.Value(5, b("v")), await(client.get(b("k"))).orElseThrow());
      assertEquals(true, await(client.delete(b("k"))));
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> await(client.call(new byte[] {9, 1, 'k'}, System.nanoTime()).thenApply(KvClient::decodeGet)));
      assertInstanceOf(KvException.class, e.getCause());
      assertEquals(0, client.retries());
      assertEquals(0, second.seen.get(), "nothing reached replica 1");
      firstLeaks.assertEveryRequestEndedOnce();
    }
  }

  @Test
  void needsTwoReplicas() throws Exception {
    try (KvServer a = replica().build().start(); KvClient only = client(a)) {
      assertThrows(IllegalArgumentException.class, () -> new KvReplicaClient(List.of(only), RetryBudget.of(0.1)));
    }
  }
}
