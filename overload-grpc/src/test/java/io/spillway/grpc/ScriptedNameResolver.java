package io.spillway.grpc;

import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import io.grpc.Status;
import io.grpc.StatusOr;
import io.grpc.SynchronizationContext;
import java.net.SocketAddress;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A name resolver whose answers the test writes: {@link #next} is the first result (or
 * {@link #failFirst} an error, or nothing while {@link #silent}), {@link #publish} and {@link #fail} send later ones, and it counts
 * the refreshes it is asked for. Each instance has a scheme of its own ({@link #target}); its
 * latest resolver is the one scripted.
 */
final class ScriptedNameResolver extends NameResolverProvider {

  private static final AtomicInteger SCHEMES = new AtomicInteger();

  private final String scheme = "scripted" + SCHEMES.incrementAndGet();
  private final Class<? extends SocketAddress> type;
  volatile List<? extends SocketAddress> next = List.of();
  volatile Status failFirst;
  /** Whether the first resolution waits for {@link #publish} (a slow name service). */
  volatile boolean silent;
  final AtomicInteger refreshes = new AtomicInteger();
  volatile CountDownLatch refreshed = new CountDownLatch(0);
  volatile boolean shutdown;
  private volatile SynchronizationContext sync;
  private volatile NameResolver.Listener2 listener;

  private ScriptedNameResolver(Class<? extends SocketAddress> type) {
    this.type = type;
  }

  /** A resolver of addresses of {@code type}, registered in {@code registry}. */
  static ScriptedNameResolver in(NameResolverRegistry registry, Class<? extends SocketAddress> type) {
    ScriptedNameResolver r = new ScriptedNameResolver(type);
    registry.register(r);
    return r;
  }

  /** A target this resolver answers for, naming the service {@code name}. */
  String target(String name) {
    return scheme + ":///" + name;
  }

  void publish(List<? extends SocketAddress> addresses) {
    sync.execute(() -> deliver(addresses));
  }

  void fail(Status error) {
    sync.execute(() -> listener.onError(error));
  }

  private void deliver(List<? extends SocketAddress> addresses) {
    List<EquivalentAddressGroup> groups =
        addresses.stream().map(a -> new EquivalentAddressGroup(a)).toList();
    listener.onResult2(NameResolver.ResolutionResult.newBuilder()
        .setAddressesOrError(StatusOr.fromValue(groups)).build());
  }

  @Override
  protected boolean isAvailable() {
    return true;
  }

  @Override
  protected int priority() {
    return 5;
  }

  @Override
  public String getDefaultScheme() {
    return scheme;
  }

  @Override
  public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
    return List.of(type);
  }

  @Override
  public NameResolver newNameResolver(URI target, NameResolver.Args args) {
    if (!scheme.equals(target.getScheme())) {
      return null;
    }
    sync = args.getSynchronizationContext();
    return new NameResolver() {
      @Override
      public String getServiceAuthority() {
        return target.getPath().substring(1);
      }

      @Override
      public void start(Listener2 l) {
        listener = l;
        if (silent) {
          return;
        }
        if (failFirst != null) {
          l.onError(failFirst);
        } else {
          deliver(next);
        }
      }

      @Override
      public void refresh() {
        refreshes.incrementAndGet();
        refreshed.countDown();
      }

      @Override
      public void shutdown() {
        shutdown = true;
      }
    };
  }
}
