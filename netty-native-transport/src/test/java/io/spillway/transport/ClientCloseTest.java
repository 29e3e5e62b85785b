package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.NoControl;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * A client closed with thousands of calls still queued on its connection ends every one of them and
 * logs at most one warning for the connection, not one per frame its close leaves unwritten.
 */
class ClientCloseTest {

  @Test
  void closingAClientWithCallsQueuedEndsEachAndWarnsAtMostOncePerConnection() throws Exception {
    Logger log = Logger.getLogger(SpillwayClient.class.getName());
    AtomicInteger warnings = new AtomicInteger();
    List<String> firstWarnings = new ArrayList<>();
    Handler counting = new Handler() {
      @Override
      public void publish(LogRecord record) {
        if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
          if (warnings.incrementAndGet() <= 3) {
            synchronized (firstWarnings) {
              firstWarnings.add(record.getMessage());
            }
          }
        }
      }

      @Override
      public void flush() { }

      @Override
      public void close() { }
    };
    log.addHandler(counting);
    boolean useParent = log.getUseParentHandlers();
    log.setUseParentHandlers(false); // thousands of lines in the build's output otherwise
    List<CompletableFuture<byte[]>> calls = new ArrayList<>();
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE)
        .handler((req, alloc) -> req.retainedDuplicate()).build().start()) {
      SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).transport(server.transport())
          .port(server.port()).sloNanos(60_000_000_000L).build().start();
      client.session(0).call(new byte[] {1}).get(20, TimeUnit.SECONDS); // connected and warm
      for (int i = 0; i < 20_000; i++) {
        calls.add(client.session(0).call(new byte[64])); // queued on the loop faster than it writes
      }
      client.close();
    } finally {
      log.removeHandler(counting);
      log.setUseParentHandlers(useParent);
    }
    int ended = 0;
    for (CompletableFuture<byte[]> call : calls) {
      try {
        call.get(20, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException expected) {
        // failed by the close: ended all the same
      }
      ended++;
    }
    assertEquals(calls.size(), ended);
    assertTrue(warnings.get() <= 1, warnings.get() + " warnings for one connection, the first: " + firstWarnings);
  }
}
