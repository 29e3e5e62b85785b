package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Ticker;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** The platform fallback, forced with {@link CarrierDispatcher#platform}, and how it is reached. */
class PlatformCarrierDispatcherTest extends CarrierDispatcherContract {

  @Override
  CarrierDispatcher newDispatcher(int carriers, Ticker ticker) {
    return CarrierDispatcher.platform(carriers, ticker);
  }

  @Test
  void forcedFallbackReportsWhyAndRunsOnPlatformThreads() {
    try (CarrierDispatcher dispatcher = CarrierDispatcher.platform(2, ticker)) {
      assertFalse(dispatcher.usesVirtualThreads());
      assertEquals(Optional.of(CarrierDispatcher.FORCED_REASON), dispatcher.fallbackReason());
      AtomicBoolean virtual = new AtomicBoolean(true);
      CountDownLatch ran = new CountDownLatch(1);
      dispatcher.execute(() -> {
        virtual.set(Thread.currentThread().isVirtual());
        ran.countDown();
      });
      Await.await(ran);
      assertFalse(virtual.get());
      assertEquals(1, dispatcher.submissions());
    }
  }

  @Test
  void aMissingConstructorFallsBackAndLogsTheReasonOnce() {
    Logger logger = Logger.getLogger(CarrierDispatcher.class.getName());
    List<LogRecord> records = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord record) {
        records.add(record);
      }

      @Override
      public void flush() { }

      @Override
      public void close() { }
    };
    logger.addHandler(capture);
    String missing = "java.lang.NoSuchBuilder" + System.nanoTime(); // a reason no other test logs
    try (CarrierDispatcher first = CarrierDispatcher.create(1, ticker, missing);
        CarrierDispatcher second = CarrierDispatcher.create(1, ticker, missing)) {
      assertFalse(first.usesVirtualThreads());
      String reason = first.fallbackReason().orElseThrow();
      assertTrue(reason.contains(missing), reason);
      assertEquals(first.fallbackReason(), second.fallbackReason());

      CountDownLatch ran = new CountDownLatch(1);
      first.execute(ran::countDown);
      Await.await(ran);
    } finally {
      logger.removeHandler(capture);
    }
    List<LogRecord> mine = records.stream()
        .filter(r -> r.getMessage().contains(missing))
        .toList();
    assertEquals(1, mine.size(), "logged once per reason: " + mine);
    assertEquals(Level.WARNING, mine.getFirst().getLevel());
  }

  @Test
  void aClassWithoutTheExecutorConstructorFallsBack() {
    try (CarrierDispatcher dispatcher = CarrierDispatcher.create(1, ticker, "java.lang.Object")) {
      assertFalse(dispatcher.usesVirtualThreads());
      assertTrue(dispatcher.fallbackReason().orElseThrow().contains("(Executor) constructor"));
    }
  }
}
