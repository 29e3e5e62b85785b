package io.spillway.grpc;

import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Gives every full gRPC method name ({@code package.Service/Method}) a small integer id, the
 * interface id of {@link io.spillway.api.RequestMetadata#interfaceId()} and
 * {@link io.spillway.api.InterfaceCall}: gates that keep per-interface state (Rajomon's price
 * tables, rajomon-nsdi25 §3.3) index arrays with it.
 *
 * <p>Ids are dense, assigned in order of first sight starting at 1, and never change or get
 * reused; 0 stays {@link #DEFAULT_INTERFACE}, the interface of requests whose method is unknown.
 * Pre-register the methods ({@link #of(ServiceDescriptor...)}) to make ids the same in every
 * process and run.
 *
 * <p>A registry numbers at most its capacity of methods ({@value #DEFAULT_CAPACITY} unless told
 * otherwise); later names all get {@link #DEFAULT_INTERFACE}. Method names can come from peers (a
 * server whose fallback handler registry serves any method, a proxy), and per-interface state
 * (Rajomon's price tables) grows with the ids: unbounded, any client could grow it at will.
 *
 * <p>Thread-safe. Looking up a known name is one {@link ConcurrentHashMap#get}; assigning a new id
 * takes a lock, once per method for the registry's lifetime.
 */
public final class InterfaceRegistry {

  /** The interface id of a request whose method is not known. */
  public static final int DEFAULT_INTERFACE = 0;

  /** How many methods a registry numbers unless told otherwise. */
  public static final int DEFAULT_CAPACITY = 1024;

  private final ConcurrentHashMap<String, Integer> ids = new ConcurrentHashMap<>();
  /** Index = id; published copy-on-write, so readers never lock. */
  private volatile String[] names = {""};
  private final int capacity;
  /** Set once every id is taken: later names skip the lock. */
  private volatile boolean full;

  /** An empty registry of {@value #DEFAULT_CAPACITY} methods; ids are assigned as they are seen. */
  public InterfaceRegistry() {
    this(DEFAULT_CAPACITY);
  }

  /** An empty registry that numbers at most {@code capacity} methods. */
  public InterfaceRegistry(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be positive: " + capacity);
    }
    this.capacity = capacity;
  }

  /**
   * A registry with {@code fullMethodNames} registered in order: ids 1, 2, ...; its capacity
   * {@value #DEFAULT_CAPACITY}, or the names' count if larger.
   */
  public static InterfaceRegistry of(String... fullMethodNames) {
    InterfaceRegistry registry =
        new InterfaceRegistry(Math.max(DEFAULT_CAPACITY, fullMethodNames.length));
    for (String name : fullMethodNames) {
      registry.idOf(name);
    }
    return registry;
  }

  /**
   * A registry with every method of {@code services} registered, services and methods in order;
   * its capacity {@value #DEFAULT_CAPACITY}, or the methods' count if larger.
   */
  public static InterfaceRegistry of(ServiceDescriptor... services) {
    int methods = 0;
    for (ServiceDescriptor service : services) {
      methods += service.getMethods().size();
    }
    InterfaceRegistry registry = new InterfaceRegistry(Math.max(DEFAULT_CAPACITY, methods));
    for (ServiceDescriptor service : services) {
      for (MethodDescriptor<?, ?> method : service.getMethods()) {
        registry.idOf(method.getFullMethodName());
      }
    }
    return registry;
  }

  /**
   * The id of {@code fullMethodName}, assigning the next free one on first sight;
   * {@link #DEFAULT_INTERFACE} for a new name once the registry is full.
   */
  public int idOf(String fullMethodName) {
    Integer id = ids.get(fullMethodName);
    if (id != null) {
      return id;
    }
    Objects.requireNonNull(fullMethodName, "fullMethodName");
    return full ? DEFAULT_INTERFACE : assign(fullMethodName);
  }

  /**
   * The id of {@code fullMethodName} if it has one, else -1; unlike {@link #idOf} it never assigns,
   * so names from a peer cannot grow the registry.
   */
  public int find(String fullMethodName) {
    Integer id = ids.get(Objects.requireNonNull(fullMethodName, "fullMethodName"));
    return id != null ? id : -1;
  }

  /** The id of {@code method}'s full name. */
  public int idOf(MethodDescriptor<?, ?> method) {
    return idOf(method.getFullMethodName());
  }

  /** The full method name with id {@code id}, or {@code null} if none has it. */
  public String nameOf(int id) {
    String[] snapshot = names;
    return id > 0 && id < snapshot.length ? snapshot[id] : null;
  }

  /** Methods registered so far, at most the capacity; their ids are 1 to {@code size()}. */
  public int size() {
    return names.length - 1;
  }

  private synchronized int assign(String name) {
    Integer existing = ids.get(name);
    if (existing != null) {
      return existing;
    }
    String[] current = names;
    int id = current.length;
    if (id > capacity) {
      if (!full) {
        full = true;
        System.getLogger(InterfaceRegistry.class.getName()).log(System.Logger.Level.WARNING,
            "{0} methods numbered, the registry''s capacity: {1} and later new methods share "
            + "interface {2}", capacity, name, DEFAULT_INTERFACE);
      }
      return DEFAULT_INTERFACE;
    }
    String[] grown = Arrays.copyOf(current, id + 1);
    grown[id] = name;
    names = grown; // published before the id, so nameOf works for every id a reader can see
    ids.put(name, id);
    return id;
  }

  @Override
  public String toString() {
    return "InterfaceRegistry" + Arrays.asList(names).subList(1, names.length);
  }
}
