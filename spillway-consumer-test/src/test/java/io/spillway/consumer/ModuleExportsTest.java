package io.spillway.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Every Spillway library jar the BOM names is a named module that exports only its API: an
 * implementation package ({@code …internal}) is exported, if at all, only to Spillway's own
 * modules, and the exported packages hold no implementation type a user could come to depend on.
 */
class ModuleExportsTest {

  private static List<Path> spillwayJars() {
    List<Path> jars = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(entry);
      String name = p.getFileName().toString();
      if (name.endsWith(".jar") && (name.startsWith("overload-")
          || name.startsWith("netty-native-transport"))) {
        jars.add(p);
      }
    }
    return jars;
  }

  private static List<ModuleDescriptor> spillwayModules() {
    List<ModuleDescriptor> modules = new ArrayList<>();
    for (Path jar : spillwayJars()) {
      for (ModuleReference ref : ModuleFinder.of(jar).findAll()) {
        assertFalse(ref.descriptor().isAutomatic(), jar + " has no module-info");
        modules.add(ref.descriptor());
      }
    }
    return modules;
  }

  @Test
  void everyLibraryJarIsANamedModuleExportingNoInternalPackageToUsers() {
    Set<String> names = new TreeSet<>();
    for (ModuleDescriptor d : spillwayModules()) {
      names.add(d.name());
      for (ModuleDescriptor.Exports e : d.exports()) {
        assertTrue(d.packages().contains(e.source()), d.name() + " exports a missing package");
        if (!e.isQualified()) {
          assertFalse(e.source().contains("internal"),
              d.name() + " exports " + e.source() + " to everyone");
          continue;
        }
        for (String target : e.targets()) {
          assertTrue(target.startsWith("io.spillway."),
              d.name() + " exports " + e.source() + " to " + target + ", not a Spillway module");
        }
      }
    }
    assertEquals(Set.of("io.spillway.api", "io.spillway.credit", "io.spillway.asqm",
        "io.spillway.price", "io.spillway.baselines", "io.spillway.peers", "io.spillway.transport",
        "io.spillway.grpc", "io.spillway.threading"), names);
  }

  /** The native frame codec is the transport's business; users talk through client and server. */
  @Test
  void theTransportsApiHoldsNoFrameCodec() {
    assertThrows(ClassNotFoundException.class, () -> Class.forName("io.spillway.transport.Frame"));
  }

  /**
   * A Breakwater gate comes from its scheme ({@code Breakwater.of(config).newServerGate(env)}) and
   * its control loop runs on the environment's scheduler: no public constructor, no public tick.
   */
  @Test
  void breakwatersServerGateIsMadeByItsSchemeAndTickedByItsScheduler() throws Exception {
    Class<?> gate = Class.forName("io.spillway.credit.BreakwaterServerGate");
    assertEquals(0, gate.getConstructors().length,
        "public constructors: " + Arrays.toString(gate.getConstructors()));
    assertTrue(Arrays.stream(gate.getDeclaredMethods())
            .noneMatch(m -> m.getName().equals("updatePool") && Modifier.isPublic(m.getModifiers())),
        "updatePool is public");
  }

  /** Every scheme's gates come from the scheme ({@code OverloadScheme.newServerGate/newClientGate}). */
  @Test
  void everySchemesGatesAreMadeByTheScheme() throws Exception {
    for (String gate : List.of("io.spillway.credit.ProtegoServerGate", "io.spillway.credit.BreakwaterClientGate",
        "io.spillway.credit.ProtegoClientGate", "io.spillway.price.RajomonServerGate",
        "io.spillway.price.RajomonClientGate")) {
      Class<?> type = Class.forName(gate);
      assertEquals(0, type.getConstructors().length, gate + ": " + Arrays.toString(type.getConstructors()));
    }
  }

  /** A policy's working parts that a scheme or an adaptation owns are not public. */
  @Test
  void ownedWorkingPartsAreNotPublic() throws Exception {
    for (String part : List.of("io.spillway.price.TokenWallet", "io.spillway.threading.ThreadingPolicy")) {
      assertFalse(Modifier.isPublic(Class.forName(part).getModifiers()), part + " is public");
    }
  }

  /**
   * Helpers only Spillway's own modules use are not public in the SPI package: they live in {@code
   * io.spillway.api.internal}, or are package-private behind a factory ({@code
   * ClientGate.sendAtOnce}).
   */
  @Test
  void theSpiPackageHoldsNoPublicImplementationHelper() {
    for (String helper : List.of("SessionIds", "SendAtOnceClientGate", "LockWaitEstimator")) {
      Class<?> type;
      try {
        type = Class.forName("io.spillway.api." + helper);
      } catch (ClassNotFoundException moved) {
        continue;
      }
      assertFalse(Modifier.isPublic(type.getModifiers()), type + " is public in the SPI package");
    }
  }

  @Test
  void everyLibraryTheBomNamesResolvedFromItAlone() {
    assertEquals(9, spillwayJars().size(), spillwayJars().toString());
  }
}
