package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where spring-demo finds ghz: on PATH first, then in ~/go/bin; nowhere means its rows are skipped. */
class SpringDemoGhzLookupTest {

  @TempDir
  Path dir;

  private Path ghzIn(Path folder, boolean executable) throws IOException {
    Files.createDirectories(folder);
    Path ghz = Files.writeString(folder.resolve("ghz"), "#!/bin/sh\n");
    Files.setPosixFilePermissions(ghz, PosixFilePermissions.fromString(executable ? "rwx------" : "rw-------"));
    return ghz;
  }

  @Test
  void takesGhzFromPathBeforeGoBin() throws IOException {
    Path onPath = ghzIn(dir.resolve("bin"), true);
    ghzIn(dir.resolve("home/go/bin"), true);
    String path = dir.resolve("empty") + File.pathSeparator + dir.resolve("bin");

    assertEquals(onPath, SpringDemoMain.findGhz(path, dir.resolve("home")));
  }

  @Test
  void fallsBackToGoBinWhereGoInstallPutsIt() throws IOException {
    Path installed = ghzIn(dir.resolve("home/go/bin"), true);

    assertEquals(installed, SpringDemoMain.findGhz(dir.resolve("bin").toString(), dir.resolve("home")));
    assertEquals(installed, SpringDemoMain.findGhz(null, dir.resolve("home")));
  }

  @Test
  void findsNothingWhereThereIsNoRunnableGhz() throws IOException {
    ghzIn(dir.resolve("bin"), false); // not executable

    assertNull(SpringDemoMain.findGhz(dir.resolve("bin").toString(), dir.resolve("home")));
  }
}
