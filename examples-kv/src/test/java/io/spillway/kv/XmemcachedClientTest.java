package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import net.rubyeye.xmemcached.GetsResponse;
import net.rubyeye.xmemcached.MemcachedClient;
import net.rubyeye.xmemcached.XMemcachedClientBuilder;
import net.rubyeye.xmemcached.utils.AddrUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A real Java memcached client (xmemcached, text protocol) against the store, unmodified. */
@Timeout(120)
class XmemcachedClientTest {

  @Test
  void anUnmodifiedClientUsesEveryOperation() throws Exception {
    try (KvServer server = KvServer.builder().host("127.0.0.1").port(0).build().start()) {
      XMemcachedClientBuilder builder = new XMemcachedClientBuilder(
          AddrUtil.getAddresses("127.0.0.1:" + server.port()));
      builder.setConnectionPoolSize(2);
      MemcachedClient client = builder.build();
      try {
        assertTrue(client.set("greeting", 0, "hello"));
        assertEquals("hello", client.get("greeting"));
        assertFalse(client.add("greeting", 0, "again"));
        assertTrue(client.replace("greeting", 0, "hi"));
        assertTrue(client.append("greeting", " there"));
        assertTrue(client.prepend("greeting", "oh, "));
        assertEquals("oh, hi there", client.get("greeting"));

        GetsResponse<String> gets = client.gets("greeting");
        assertTrue(client.cas("greeting", 0, "swapped", gets.getCas()));
        assertFalse(client.cas("greeting", 0, "stale", gets.getCas()), "the CAS value moved on");
        assertEquals("swapped", client.get("greeting"));

        assertEquals(10, client.incr("counter", 0, 10));
        assertEquals(15, client.incr("counter", 5));
        assertEquals(12, client.decr("counter", 3));

        for (int i = 0; i < 100; i++) {
          client.set("k" + i, 0, "v" + i);
        }
        Map<String, String> many = client.get(List.of("k0", "k42", "k99", "absent"));
        assertEquals(Map.of("k0", "v0", "k42", "v42", "k99", "v99"), many);

        byte[] large = new byte[500_000];
        new java.util.Random(7).nextBytes(large);
        assertTrue(client.set("large", 0, large));
        assertTrue(java.util.Arrays.equals(large, client.get("large")));

        assertTrue(client.delete("greeting"));
        assertNull(client.get("greeting"));
        assertTrue(client.touch("k1", 100));
        client.flushAll();
        assertNull(client.get("k1"));
      } finally {
        client.shutdown();
      }
    }
  }
}
