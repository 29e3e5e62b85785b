package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The VAR workload's shape, and the load generator's reply parsing against the real server. */
@Timeout(60)
class MemcacheLoadTest {

  @Test
  void varIsSetHeavyAndSkewed() {
    VarWorkload w = new VarWorkload(3);
    int sets = 0;
    int hot = 0;
    int n = 200_000;
    for (int i = 0; i < n; i++) {
      sets += w.nextOp() == VarWorkload.Op.SET ? 1 : 0;
      hot += w.nextKey() < VarWorkload.KEYS / 10 ? 1 : 0;
    }
    assertEquals(0.82, sets / (double) n, 0.005, "82 % SET (protego-nsdi23 §5.3)");
    assertEquals(0.90, hot / (double) n, 0.005, "10 % of the keys take 90 % of the requests");
    for (int k = 0; k < VarWorkload.KEYS; k += 997) {
      assertTrue(w.key(k).length <= 250 && w.valueLength(k) >= 1 && w.valueLength(k) <= 16 * 1024);
    }
  }

  @Test
  void everyRequestIsAnsweredAndParsed() throws Exception {
    try (KvServer server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(256)
        .protection(KvServer.Protection.NONE).build().start()) {
      MemcacheLoad load = new MemcacheLoad(new InetSocketAddress("127.0.0.1", server.port()), 4,
          0.5, 1, 1_000_000_000L);
      load.preload();
      assertEquals(VarWorkload.KEYS, server.store().items(), "the preload stored every key");
      MemcacheLoad.Report r = load.run(2_000, 0.1, 0.5);
      assertTrue(r.sent() > 0, r.line());
      assertEquals(0, r.errors(), r.line());
      assertEquals(0, r.rejected(), r.line());
      assertEquals(r.sent(), r.ok() + r.unanswered(), r.line());
      assertTrue(server.store().getHits.sum() > 0 && server.store().getMisses.sum() == 0, r.line());
    }
  }
}
