package io.spillway.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** Every Spillway library jar the BOM names is a named module that exports only its API. */
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

  @Test
  void everyLibraryJarIsANamedModuleExportingNoInternalPackage() {
    List<Path> jars = spillwayJars();
    Set<String> names = new TreeSet<>();
    for (Path jar : jars) {
      for (ModuleReference ref : ModuleFinder.of(jar).findAll()) {
        ModuleDescriptor d = ref.descriptor();
        assertFalse(d.isAutomatic(), jar + " has no module-info");
        names.add(d.name());
        for (ModuleDescriptor.Exports e : d.exports()) {
          assertFalse(e.source().contains("internal"), d.name() + " exports " + e.source());
          assertTrue(d.packages().contains(e.source()), d.name() + " exports a missing package");
        }
      }
    }
    assertEquals(Set.of("io.spillway.api", "io.spillway.credit", "io.spillway.asqm",
        "io.spillway.price", "io.spillway.baselines", "io.spillway.peers", "io.spillway.transport",
        "io.spillway.grpc", "io.spillway.threading"), names);
  }

  @Test
  void everyLibraryTheBomNamesResolvedFromItAlone() {
    assertEquals(9, spillwayJars().size(), spillwayJars().toString());
  }
}
