package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import javax.management.remote.JMXConnector;
import org.junit.jupiter.api.Test;

/**
 * The dump files' clean-up must not hide why a dump or a close failed: a failed delete is
 * suppressed in the failure it follows. The dumper and the connector are stand-ins that fail on
 * purpose and leave a file where the clean-up would delete a directory.
 */
class LockWaitSamplerFileDumpsTest {

  /** A diagnostic bean whose {@code dumpThreads} runs {@code onDump} with the file it was given. */
  private static HotSpotDiagnosticMXBean dumper(Consumer<Path> onDump, IOException failure) {
    return (HotSpotDiagnosticMXBean) Proxy.newProxyInstance(
        HotSpotDiagnosticMXBean.class.getClassLoader(), new Class<?>[] {HotSpotDiagnosticMXBean.class},
        (proxy, method, args) -> {
          if (method.getName().equals("dumpThreads")) {
            onDump.accept(Path.of((String) args[0]));
            throw failure;
          }
          throw new UnsupportedOperationException(method.getName());
        });
  }

  private static void mkdirWithAFileIn(Path dir) {
    try {
      Files.createDirectory(dir);
      Files.writeString(dir.resolve("left"), "x");
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aFailedDumpIsThrownWithTheFailedDeleteSuppressed() throws IOException {
    IOException dumpFailure = new IOException("the dump failed");
    AtomicReference<Path> target = new AtomicReference<>();
    // A directory where the dump file would be: deleting it afterwards fails too.
    LockWaitSampler.FileDumps dumps = new LockWaitSampler.FileDumps(dumper(file -> {
      target.set(file);
      mkdirWithAFileIn(file);
    }, dumpFailure), null);
    try {
      IOException thrown = assertThrows(IOException.class, dumps::dump);
      assertEquals(dumpFailure, thrown);
      assertEquals(1, thrown.getSuppressed().length);
      assertInstanceOf(DirectoryNotEmptyException.class, thrown.getSuppressed()[0]);
    } finally {
      Files.deleteIfExists(target.get().resolve("left"));
      Files.deleteIfExists(target.get());
      dumps.close();
    }
  }

  @Test
  void aFailedCloseOfTheConnectionIsThrownWithTheFailedDeleteSuppressed() throws IOException {
    IOException closeFailure = new IOException("the connection did not close");
    JMXConnector connector = (JMXConnector) Proxy.newProxyInstance(
        JMXConnector.class.getClassLoader(), new Class<?>[] {JMXConnector.class},
        (proxy, method, args) -> {
          if (method.getName().equals("close")) {
            throw closeFailure;
          }
          throw new UnsupportedOperationException(method.getName());
        });
    AtomicReference<Path> stray = new AtomicReference<>();
    // The dump leaves a file beside its own in the private directory: that directory cannot go.
    LockWaitSampler.FileDumps dumps = new LockWaitSampler.FileDumps(dumper(file -> {
      try {
        stray.set(Files.writeString(file.resolveSibling("stray"), "x"));
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }, new IOException("the dump failed")), connector);
    assertThrows(IOException.class, dumps::dump);
    try {
      IOException thrown = assertThrows(IOException.class, dumps::close);
      assertEquals(closeFailure, thrown);
      assertEquals(1, thrown.getSuppressed().length);
      assertInstanceOf(DirectoryNotEmptyException.class, thrown.getSuppressed()[0]);
    } finally {
      Path dir = stray.get().getParent();
      Files.deleteIfExists(stray.get());
      Files.deleteIfExists(dir);
    }
  }
}
