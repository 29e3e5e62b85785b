package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * When two things fail, the first failure is the one thrown and the later one rides along as
 * suppressed (as try-with-resources does): a failing sampler must not hide why the workload
 * failed, nor turn an interrupt into an I/O error. The sampler is made to fail before the primary
 * failure happens, coordinated by a latch and a join, so nothing depends on timing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ContendedLockFinderFailureTest {

  /** A dump source whose first dump fails; {@link #awaitFailureRecorded} waits until the sampler has recorded it. */
  private static final class FailingDumps implements LockWaitSampler.DumpSource {
    final IOException failure = new IOException("the dump failed");
    final CountDownLatch dumped = new CountDownLatch(1);
    final AtomicReference<Thread> sampler = new AtomicReference<>();

    @Override
    public String dump() throws IOException {
      sampler.set(Thread.currentThread());
      dumped.countDown();
      throw failure;
    }

    /** The sampler thread stores the failure and ends right after the dump throws. */
    void awaitFailureRecorded() {
      Await.await(dumped);
      Await.join(sampler.get());
    }
  }

  @Test
  void aWorkloadsFailureIsThrownWithTheSamplersFailureSuppressed() {
    FailingDumps dumps = new FailingDumps();
    IllegalStateException workloadFailure = new IllegalStateException("the workload failed");
    IllegalStateException thrown = assertThrows(IllegalStateException.class,
        () -> ContendedLockFinder.profile(() -> {
          dumps.awaitFailureRecorded();
          throw workloadFailure;
        }, dumps, Duration.ofMillis(1)));
    assertEquals(workloadFailure, thrown);
    assertArrayEquals(new Throwable[] {dumps.failure}, thrown.getSuppressed());
  }

  @Test
  void aSamplersFailureAloneIsThrown() {
    FailingDumps dumps = new FailingDumps();
    IOException thrown = assertThrows(IOException.class,
        () -> ContendedLockFinder.profile(dumps::awaitFailureRecorded, dumps, Duration.ofMillis(1)));
    assertEquals(dumps.failure, thrown);
  }

  @Test
  void anInterruptedSampleIsThrownAsSuchWithTheSamplersFailureSuppressed() throws Exception {
    FailingDumps dumps = new FailingDumps();
    Thread caller = Thread.currentThread();
    Thread interrupter = Thread.ofPlatform().start(() -> {
      dumps.awaitFailureRecorded();
      caller.interrupt();
    });
    try {
      InterruptedException thrown = assertThrows(InterruptedException.class,
          () -> ContendedLockFinder.sample(dumps, Duration.ofDays(1), Duration.ofMillis(1), false));
      assertEquals(1, thrown.getSuppressed().length, "the sampler's failure rides along");
      assertInstanceOf(IOException.class, thrown.getSuppressed()[0]);
      assertEquals(dumps.failure, thrown.getSuppressed()[0]);
    } finally {
      Await.join(interrupter);
      Thread.interrupted(); // in case the assertion failed before the interrupt was taken
    }
  }
}
