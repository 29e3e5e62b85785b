package io.spillway.kv;

import static io.spillway.kv.FrameSchemes.WAIT_SECONDS;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.NoControl;
import io.spillway.api.Status;
import io.spillway.asqm.BudgetedLock;
import io.spillway.transport.OverloadRejectedException;
import io.spillway.transport.SpillwayClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The KV operations over Spillway's native frame, on real sockets: every operation under every
 * frame scheme, a lock's budget reject arriving as a fast reject, malformed payloads answered
 * with {@code CLIENT_ERROR} while the connection keeps working, and every admitted request ending
 * exactly once (a leak-checking gate). Waits are bounded only so a bug fails instead of hanging.
 */
@Timeout(120)
class KvFrameTest {

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(WAIT_SECONDS, TimeUnit.SECONDS);
  }

  private static KvServer server(FrameSchemes.LeakChecks leaks, KvServer.FrameScheme frameScheme) throws Exception {
    // a target of 10 s: no lock budget or client-queue timeout can refuse anything in these tests
    return KvServer.builder().host("127.0.0.1").port(-1).framePort(0).memoryMegabytes(8)
        .target(Duration.ofSeconds(10)).frameScheme(frameScheme).frameSchemeWrapper(leaks::wrap).build().start();
  }

  @ParameterizedTest
  @EnumSource(KvServer.FrameScheme.class)
  void everyOperationOverTheFrame(KvServer.FrameScheme frameScheme) throws Exception {
    FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
    try (KvServer server = server(leaks, frameScheme);
         KvClient client = KvClient.builder().port(server.framePort()).sessions(4)
             .scheme(frameScheme.scheme(10_000_000_000L)).sloNanos(10_000_000_000L).start()) {
      assertEquals(Optional.empty(), await(client.get(b("k"))), "a miss");
      await(client.set(b("k"), 0xFEEDF00D, 0, b("value")));
      assertEquals(Optional.of(new KvClient.Value(0xFEEDF00D, b("value"))), await(client.get(b("k"))),
          "flags are an unsigned 32-bit value, as memcached's");
      await(client.set(b("k"), 7, 0, b("replaced")));
      assertEquals(new KvClient.Value(7, b("replaced")), await(client.get(b("k"))).orElseThrow());
      await(client.set(b("empty"), 0, 0, new byte[0]));
      assertEquals(0, await(client.get(b("empty"))).orElseThrow().data().length);
      byte[] big = new byte[500_000];
      new Random(1).nextBytes(big);
      await(client.set(b("big"), 1, 0, big));
      assertArrayEquals(big, await(client.get(b("big"))).orElseThrow().data());
      await(client.set(b("gone"), 0, -1, b("x")));
      assertEquals(Optional.empty(), await(client.get(b("gone"))), "a negative exptime is already expired");
      assertTrue(await(client.delete(b("k"))));
      assertFalse(await(client.delete(b("k"))), "deleted once");
      assertEquals(Optional.empty(), await(client.get(b("k"))));
      byte[] longest = new byte[KvStore.MAX_KEY_LENGTH];
      java.util.Arrays.fill(longest, (byte) 'k');
      await(client.set(longest, 0, 0, b("v")));
      assertEquals(b("v").length, await(client.get(longest)).orElseThrow().data().length);
      List<CompletableFuture<Void>> many = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        many.add(client.set(b("key" + i), i, 0, b("value" + i)));
      }
      for (CompletableFuture<Void> f : many) {
        await(f);
      }
      for (int i = 0; i < 200; i++) {
        assertEquals(new KvClient.Value(i, b("value" + i)), await(client.get(b("key" + i))).orElseThrow());
      }
      assertEquals(server.store().items(), server.store().slabs().usage().usedChunks(),
          "every used chunk belongs to a live item");
      leaks.assertEveryRequestEndedOnce();
    }
  }

  @Test
  void theClientRefusesKeysTheProtocolCannotCarry() throws Exception {
    FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
    try (KvServer server = server(leaks, KvServer.FrameScheme.NONE);
         KvClient client = KvClient.builder().port(server.framePort()).sloNanos(10_000_000_000L).start()) {
      assertThrows(IllegalArgumentException.class, () -> client.get(new byte[0]));
      assertThrows(IllegalArgumentException.class, () -> client.get(new byte[KvStore.MAX_KEY_LENGTH + 1]));
    }
  }

  /**
   * A SET whose budget the slab lock's queue already exceeds is turned away with REJECTED_BUDGET
   * while the lock is still held, so without waiting for it: the fast reject a client may retry
   * elsewhere. The server's clock is a counter this test moves (virtual time); the SET already
   * queued completes when the lock frees, and the refused SET's chunk is not leaked.
   */
  @Test
  void aLockBudgetRejectArrivesAsAFastReject() throws Exception {
    AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 1_000_000_000L);
    FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
    // two loops: consecutive connections land on different loops (Netty's round-robin chooser),
    // so the SET blocked on the slab lock does not hold up the connection that gets refused
    try (KvServer server = KvServer.builder().host("127.0.0.1").port(-1).framePort(0).cores(2)
        .memoryMegabytes(8).frameScheme(KvServer.FrameScheme.NONE).target(Duration.ofNanos(110_000))
        .frameSchemeWrapper(leaks::wrap).ticker(clock::get).build().start();
         // client queues that expire nothing (10 s): a busy build machine must not expire a call unsent
         KvClient queued = KvClient.builder().port(server.framePort()).firstSessionId(1)
             .sloNanos(10_000_000_000L).start();
         KvClient refused = KvClient.builder().port(server.framePort()).firstSessionId(100)
             .sloNanos(10_000_000_000L).start()) {
      BudgetedLock slabs = server.store().slabs().lock();
      CompletableFuture<Void> first;
      slabs.lock();
      try {
        first = queued.set(b("a"), 0, 0, b("first"));
        CompletableFuture<Void> waiting = first;
        FrameSchemes.waitUntil(() -> slabs.waiters() > 0 || waiting.isDone());
        assertFalse(first.isDone(), () -> "the first SET should queue on the slab lock: " + first);
        clock.addAndGet(1_000_000); // the queued SET has waited 1 ms, far over a 110 µs target
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> await(refused.set(b("b"), 0, 0, b("second"))));
        OverloadRejectedException rejected = assertInstanceOf(OverloadRejectedException.class, e.getCause());
        assertEquals(Status.REJECTED_BUDGET, rejected.status());
        assertTrue(rejected.wasSent(), "the server refused it, not the client queue");
        assertFalse(first.isDone(), "the reject came while the lock was still held");
      } finally {
        slabs.unlock();
      }
      await(first);
      assertEquals(new KvClient.Value(0, b("first")), await(queued.get(b("a"))).orElseThrow());
      assertEquals(Optional.empty(), await(refused.get(b("b"))), "a refused SET stores nothing");
      assertEquals(1, server.rejected()[1], "one refusal at the slab lock");
      assertEquals(server.store().items(), server.store().slabs().usage().usedChunks(),
          "the refused SET's chunk was given back");
      leaks.assertEveryRequestEndedOnce();
    }
  }

  /** Each malformed payload gets CLIENT_ERROR and a reason; the same connection then still works. */
  @Test
  void malformedPayloadsGetAClientErrorAndTheConnectionKeepsWorking() throws Exception {
    FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
    byte[] k = b("key");
    List<byte[]> bad = List.of(
        new byte[0],                                    // nothing
        new byte[] {1},                                 // an op and no key length
        new byte[] {9, 1, 'k'},                         // unknown op
        new byte[] {(byte) 0xFF, 1, 'k'},               // unknown op, high bit set
        new byte[] {1, 0},                              // empty key
        concat(new byte[] {1, (byte) 251}, new byte[251]), // key over 250 bytes
        new byte[] {1, 10, 'k'},                        // key shorter than declared
        concat(KvFrameCodec.encode(KvFrameCodec.OP_GET, k, 0, 0, null), new byte[] {0}), // GET with trailing bytes
        concat(KvFrameCodec.encode(KvFrameCodec.OP_DELETE, k, 0, 0, null), new byte[] {0}),
        concat(new byte[] {2, 3}, concat(k, new byte[7])) // SET short of its flags and exptime
    );
    try (KvServer server = server(leaks, KvServer.FrameScheme.NONE);
         SpillwayClient raw = SpillwayClient.builder().scheme(NoControl.INSTANCE).port(server.framePort())
             .sloNanos(10_000_000_000L).build().start();
         KvClient client = KvClient.builder().port(server.framePort()).firstSessionId(100)
             .sloNanos(10_000_000_000L).start()) {
      for (byte[] payload : bad) {
        byte[] answer = await(raw.session(0).call(payload));
        assertEquals(KvFrameCodec.CLIENT_ERROR, answer[0], () -> "payload " + java.util.Arrays.toString(payload));
        assertTrue(answer.length > 1, "with a reason");
        KvException e = assertThrows(KvException.class, () -> KvClient.decodeGet(answer));
        assertTrue(e.isClientError());
        byte[] ok = await(raw.session(0).call(KvFrameCodec.encode(KvFrameCodec.OP_SET, k, 3, 0, b("v"))));
        assertEquals(KvFrameCodec.OK, ok[0], "the connection keeps working after a bad payload");
      }
      assertEquals(new KvClient.Value(3, b("v")), await(client.get(k)).orElseThrow());
      assertEquals(server.store().items(), server.store().slabs().usage().usedChunks());
      leaks.assertEveryRequestEndedOnce();
    }
  }

  /**
   * Seeded random payloads (mutated valid requests and raw bytes): every one gets a response with
   * a known code, the server keeps serving, every request ends once and no chunk leaks. {@code
   * -Dkv.frame.fuzz.seed=S} replays a failure (the seed is in every message); {@code
   * -Dkv.frame.fuzz.payloads=N} runs longer.
   */
  @Test
  void randomPayloadsNeverBreakTheServer() throws Exception {
    long seed = Long.getLong("kv.frame.fuzz.seed", System.nanoTime());
    int payloads = Integer.getInteger("kv.frame.fuzz.payloads", 2_000);
    String tag = "seed " + seed + " (-Dkv.frame.fuzz.seed=" + seed + ")";
    System.out.println("KvFrameTest fuzz: " + tag);
    Random random = new Random(seed);
    FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
    try (KvServer server = server(leaks, KvServer.FrameScheme.NONE);
         SpillwayClient raw = SpillwayClient.builder().scheme(NoControl.INSTANCE).port(server.framePort())
             .sessions(8).sloNanos(10_000_000_000L).build().start()) {
      List<CompletableFuture<byte[]>> answers = new ArrayList<>();
      for (int i = 0; i < payloads; i++) {
        answers.add(raw.session(i % 8).call(randomPayload(random)));
      }
      for (CompletableFuture<byte[]> f : answers) {
        byte[] a = f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertTrue(a.length >= 1 && a[0] >= KvFrameCodec.OK && a[0] <= KvFrameCodec.SERVER_ERROR, tag);
      }
      byte[] ok = await(raw.session(0).call(KvFrameCodec.encode(KvFrameCodec.OP_GET, b("probe"), 0, 0, null)));
      assertEquals(KvFrameCodec.NOT_FOUND, ok[0], tag);
      assertEquals(server.store().items(), server.store().slabs().usage().usedChunks(), tag);
      leaks.assertEveryRequestEndedOnce();
    }
  }

  private static byte[] randomPayload(Random r) {
    byte[] key = new byte[1 + r.nextInt(20)];
    r.nextBytes(key);
    byte[] p = switch (r.nextInt(4)) {
      case 0 -> KvFrameCodec.encode(KvFrameCodec.OP_GET, key, 0, 0, null);
      case 1 -> KvFrameCodec.encode(KvFrameCodec.OP_SET, key, r.nextInt(), r.nextInt(3) - 1, new byte[r.nextInt(300)]);
      case 2 -> KvFrameCodec.encode(KvFrameCodec.OP_DELETE, key, 0, 0, null);
      default -> {
        byte[] g = new byte[r.nextInt(40)];
        r.nextBytes(g);
        yield g;
      }
    };
    int mutations = r.nextInt(3);
    for (int m = 0; m < mutations && p.length > 0; m++) {
      p[r.nextInt(p.length)] = (byte) r.nextInt(256);
    }
    if (r.nextInt(5) == 0 && p.length > 0) {
      p = java.util.Arrays.copyOf(p, r.nextInt(p.length)); // truncated
    }
    return p;
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }
}
