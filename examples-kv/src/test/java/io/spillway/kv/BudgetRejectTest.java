package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.asqm.BudgetedLock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A SET whose budget the slab lock's queue already exceeds is answered at once with memcached's
 * error form and its value skipped, on a real socket, in virtual time (the server's ticker is a
 * counter this test moves); the SET that was already queued completes when the lock frees, and no
 * chunk leaks (protego-nsdi23 §5.3: a dropped SET frees its memory under the plain acquire).
 */
@Timeout(60)
class BudgetRejectTest {

  @Test
  void aSetThatCannotFitItsBudgetIsRefusedAtOnce() throws Exception {
    AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 1_000_000_000L);
    // two loops: consecutive connections land on different loops (Netty's round-robin chooser),
    // so the SET blocked on the slab lock does not block the connection that gets refused
    try (KvServer server = asqmServer(clock, 2);
        MemcacheConnection queued = new MemcacheConnection(server.port());
        MemcacheConnection refused = new MemcacheConnection(server.port())) {
      BudgetedLock slabs = server.store().slabs().lock();
      slabs.lock();
      try {
        sendAndWaitUntilQueued(queued, "set a 0 0 5\r\nfirst\r\n", slabs);
        clock.addAndGet(1_000_000); // the queued SET has waited 1 ms, far over a 110 µs target
        refused.send("set b 0 0 6\r\nsecond\r\nget b\r\n");
        String want = "SERVER_ERROR overloaded (lock queue exceeds budget)\r\nEND\r\n";
        assertEquals(want, refused.read(want));
      } finally {
        slabs.unlock();
      }
      assertEquals("STORED\r\n", queued.read("STORED\r\n"));
      queued.send("get a\r\n");
      String want = "VALUE a 0 5\r\nfirst\r\nEND\r\n";
      assertEquals(want, queued.read(want));
      assertEquals(0, server.rejected()[0], "the ASQM scheme has no gate");
      assertEquals(1, server.rejected()[1], "one refusal at the slab lock");
      SlabAllocator.Usage u = server.store().slabs().usage();
      assertEquals(server.store().items(), u.usedChunks(), "the refused SET's chunk was never taken");
    }
  }

  /**
   * The p99 service time that budgets are set from (target − p99 service, protego-nsdi23 §3.2)
   * leaves out what a request waited at a budgeted lock: that wait was queueing, charged to its
   * budget. A SET that waited 50 µs for the slab lock and did nothing else in virtual time records
   * no service time.
   */
  @Test
  void aWaitAtABudgetedLockIsNotServiceTime() throws Exception {
    AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 1_000_000_000L);
    try (KvServer server = asqmServer(clock, 1);
        MemcacheConnection c = new MemcacheConnection(server.port())) {
      BudgetedLock slabs = server.store().slabs().lock();
      slabs.lock();
      try {
        sendAndWaitUntilQueued(c, "set a 0 0 5\r\nfirst\r\n", slabs);
        clock.addAndGet(50_000); // within its 110 µs budget
      } finally {
        slabs.unlock();
      }
      assertEquals("STORED\r\n", c.read("STORED\r\n"));
      c.send("stats\r\n");
      String stats = c.readThrough("END\r\n");
      String line = stats.lines().filter(l -> l.startsWith("STAT spillway_p99_service_ns "))
          .findFirst().orElseThrow();
      long p99 = Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
      assertEquals(1, p99, "a first sample of 0 ns is kept as 1 ns; the 50 µs wait is not in it");
    }
  }

  /** A KV server with ASQM budgets at the paper's 110 µs target, on {@code clock}. */
  private static KvServer asqmServer(AtomicLong clock, int cores) throws Exception {
    return KvServer.builder().host("127.0.0.1").port(0).cores(cores)
        .protection(KvServer.Protection.ASQM).target(Duration.ofNanos(110_000))
        .ticker(clock::get).build().start();
  }

  /** Sends {@code command} and waits until it queues on {@code lock}, which the test holds. */
  private static void sendAndWaitUntilQueued(MemcacheConnection c, String command,
      BudgetedLock lock) throws Exception {
    c.send(command);
    while (lock.waiters() == 0) {
      Thread.onSpinWait();
    }
  }
}
