package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.ConnectivityState;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.NameResolver;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.grpc.inprocess.InProcessSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The per-backend balancer's connections under {@link PerBackendSessions.Builder#pickFirst}, driven
 * through a scripted helper whose subchannels change state only when the test says: backends are
 * tried in resolution order one at a time, every other connection closes once one is ready, and a
 * call its session bound to a backend that is no longer connected fails instead of waiting.
 */
class PerBackendLoadBalancerTest {

  private final SynchronizationContext sync =
      new SynchronizationContext((thread, error) -> { throw new AssertionError(error); });
  private final ScriptedHelper helper = new ScriptedHelper();
  private final EquivalentAddressGroup a = group("a");
  private final EquivalentAddressGroup b = group("b");
  private final EquivalentAddressGroup c = group("c");

  private static EquivalentAddressGroup group(String name) {
    return new EquivalentAddressGroup(new InProcessSocketAddress(name));
  }

  private PerBackendLoadBalancer pickFirstBalancer(PerBackendSessions sessions) {
    helper.args = NameResolver.Args.newBuilder().setDefaultPort(443)
        .setProxyDetector(address -> null).setSynchronizationContext(sync)
        .setServiceConfigParser(new NameResolver.ServiceConfigParser() {
          @Override
          public NameResolver.ConfigOrError parseServiceConfig(java.util.Map<String, ?> config) {
            return NameResolver.ConfigOrError.fromConfig(config);
          }
        })
        .setArg(PerBackendSessions.SESSIONS, sessions).build();
    return new PerBackendLoadBalancer(helper);
  }

  private static PerBackendSessions pickFirstSessions() {
    return SpillwayGrpc.perBackend(io.spillway.api.NoControl.INSTANCE).slo(Duration.ofMillis(5))
        .pickFirst().build();
  }

  @Test
  void pickFirstConnectsInOrderOneAtATimeAndKeepsOneConnection() {
    try (PerBackendSessions sessions = pickFirstSessions()) {
      PerBackendLoadBalancer lb = pickFirstBalancer(sessions);
      lb.acceptResolvedAddresses(LoadBalancer.ResolvedAddresses.newBuilder()
          .setAddresses(List.of(a, b, c)).build());
      assertEquals(List.of(a), helper.made(), "only the first backend is connected");
      ScriptedSubchannel first = helper.of(a);
      assertTrue(first.connectRequested);

      first.report(ConnectivityState.CONNECTING);
      first.report(ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));
      assertEquals(List.of(a, b), helper.made(), "the next in order once the first failed");
      ScriptedSubchannel second = helper.of(b);
      second.report(ConnectivityState.CONNECTING);
      second.report(ConnectivityState.READY);
      assertTrue(first.shutdown, "the failed backend's connection closed once another was ready");
      assertFalse(second.shutdown);
      assertEquals(List.of(a, b), helper.made(), "the third never connected");
      assertEquals(ConnectivityState.READY, helper.state);

      // a call its session bound to the first backend (released after the move) fails at once
      LoadBalancer.PickResult stale = helper.picker.pickSubchannel(args(a, sessions));
      assertEquals(Status.Code.UNAVAILABLE, stale.getStatus().getCode());
      assertTrue(stale.getStatus().getDescription().contains("no longer connected"),
          stale.getStatus().toString());
      assertSame(second, helper.picker.pickSubchannel(args(b, sessions)).getSubchannel());

      // the connection is lost: start again from the first backend
      second.report(ConnectivityState.IDLE);
      assertEquals(List.of(a, b, a), helper.made(), "a new connection to the first backend");
      assertTrue(helper.made.get(2).connectRequested);
      assertFalse(second.shutdown, "kept while the first is tried again");
      lb.shutdown();
    }
  }

  @Test
  void pickFirstKeepsTheConnectedBackendWhileANewResolutionHoldsIt() {
    try (PerBackendSessions sessions = pickFirstSessions()) {
      PerBackendLoadBalancer lb = pickFirstBalancer(sessions);
      lb.acceptResolvedAddresses(LoadBalancer.ResolvedAddresses.newBuilder()
          .setAddresses(List.of(a, b)).build());
      helper.of(a).report(ConnectivityState.READY);
      lb.acceptResolvedAddresses(LoadBalancer.ResolvedAddresses.newBuilder()
          .setAddresses(List.of(c, b, a)).build());
      assertEquals(List.of(a), helper.made(), "no connection to the new first backend");
      assertFalse(helper.of(a).shutdown);

      lb.acceptResolvedAddresses(LoadBalancer.ResolvedAddresses.newBuilder()
          .setAddresses(List.of(c, b)).build());
      assertTrue(helper.of(a).shutdown, "the connected backend left the resolution");
      assertEquals(List.of(a, c), helper.made(), "the first of the new resolution is tried");
      lb.shutdown();
    }
  }

  private static LoadBalancer.PickSubchannelArgs args(EquivalentAddressGroup backend,
      PerBackendSessions sessions) {
    CallOptions options = CallOptions.DEFAULT.withOption(PerBackendSessions.ROUTE,
        new PerBackendSessions.Route(sessions,
            new EquivalentAddressGroup(backend.getAddresses()), false));
    return new LoadBalancer.PickSubchannelArgs() {
      @Override
      public CallOptions getCallOptions() {
        return options;
      }

      @Override
      public Metadata getHeaders() {
        return new Metadata();
      }

      @Override
      public MethodDescriptor<?, ?> getMethodDescriptor() {
        return Echo.UNARY;
      }
    };
  }

  /** A helper whose subchannels are scripted; records every subchannel made, in order. */
  private final class ScriptedHelper extends LoadBalancer.Helper {
    NameResolver.Args args;
    final List<ScriptedSubchannel> made = new ArrayList<>();
    ConnectivityState state;
    LoadBalancer.SubchannelPicker picker;

    List<EquivalentAddressGroup> made() {
      return made.stream().map(s -> s.group).toList();
    }

    /** The newest subchannel made for {@code group}. */
    ScriptedSubchannel of(EquivalentAddressGroup group) {
      for (int i = made.size() - 1; i >= 0; i--) {
        if (made.get(i).group.equals(group)) {
          return made.get(i);
        }
      }
      throw new AssertionError("no subchannel for " + group);
    }

    @Override
    public LoadBalancer.Subchannel createSubchannel(LoadBalancer.CreateSubchannelArgs args) {
      ScriptedSubchannel s = new ScriptedSubchannel(args.getAddresses().get(0));
      made.add(s);
      return s;
    }

    @Override
    public void updateBalancingState(ConnectivityState newState,
        LoadBalancer.SubchannelPicker newPicker) {
      state = newState;
      picker = newPicker;
    }

    @Override
    public NameResolver.Args getNameResolverArgs() {
      return args;
    }

    @Override
    public SynchronizationContext getSynchronizationContext() {
      return sync;
    }

    @Override
    public void refreshNameResolution() { }

    @Override
    public ManagedChannel createOobChannel(EquivalentAddressGroup eag, String authority) {
      throw new UnsupportedOperationException();
    }

    @Override
    public String getAuthority() {
      return "scripted";
    }
  }

  /** A subchannel whose state the test reports; records connection requests and shutdown. */
  private static final class ScriptedSubchannel extends LoadBalancer.Subchannel {
    final EquivalentAddressGroup group;
    LoadBalancer.SubchannelStateListener listener;
    boolean connectRequested;
    boolean shutdown;

    ScriptedSubchannel(EquivalentAddressGroup group) {
      this.group = group;
    }

    void report(ConnectivityState state) {
      report(ConnectivityStateInfo.forNonError(state));
    }

    void report(ConnectivityStateInfo state) {
      if (!shutdown) {
        listener.onSubchannelState(state);
      }
    }

    @Override
    public void start(LoadBalancer.SubchannelStateListener listener) {
      this.listener = listener;
    }

    @Override
    public void shutdown() {
      shutdown = true;
    }

    @Override
    public void requestConnection() {
      connectRequested = true;
    }

    @Override
    public List<EquivalentAddressGroup> getAllAddresses() {
      return List.of(group);
    }

    @Override
    public Attributes getAttributes() {
      return Attributes.EMPTY;
    }
  }

  @org.junit.jupiter.api.AfterEach
  void drain() {
    sync.drain();
  }
}
