package io.spillway.grpc;

import io.grpc.Attributes;
import io.grpc.ConnectivityState;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The load balancer of a channel with {@link PerBackendSessions}: one subchannel per resolved
 * address group, as {@code round_robin} keeps, and a call goes to the subchannel its session
 * chose ({@link PerBackendSessions#ROUTE} in its call options). The sessions choose before the
 * call waits for a credit, so a backend's credits only ever release calls bound for that backend
 * (docs/design.md, "A request's path on a client"); a load balancer that picked after the wait
 * would spend one backend's credit on another.
 *
 * <p>When the sessions send every call to one backend ({@link PerBackendSessions.Builder#pickFirst}),
 * the balancer keeps one connection, as gRPC's {@code pick_first} does: it connects to the
 * backends in resolution order, one at a time, moving on when one fails, until one is ready; it
 * then closes every other backend's connection. When that connection is lost it starts again from
 * the first backend; a new resolution that still holds the connected backend keeps it.
 *
 * <p>Calls without a chosen backend (plain calls, made before the sessions have heard of any
 * subchannel) rotate over the ready subchannels. Every subchannel state change is told to the
 * sessions that use the channel ({@link PerBackendSessions#backendsChanged}). The balancer knows
 * them from its making when {@link PerBackendSessions#install} passed them as a name-resolver
 * argument ({@link PerBackendSessions#SESSIONS}), and otherwise from the first call that carries
 * them (in the same option): gRPC gives a balancer no other reference to the channel's
 * interceptors. A call that only wakes the channel ({@link PerBackendSessions.Route#wake}) is
 * dropped unsent.
 *
 * <p>Runs in the channel's synchronization context, as gRPC requires; the picker is immutable
 * and may be called from any thread.
 */
final class PerBackendLoadBalancer extends LoadBalancer {

  private final Helper helper;
  /** Address groups (without attributes) to their subchannels, in resolution order. */
  private final Map<EquivalentAddressGroup, Backend> backends = new LinkedHashMap<>();
  private PerBackendSessions sessions;
  /** One connection at a time, in resolution order (the sessions' {@code pickFirst}). */
  private boolean oneAtATime;
  private Status lastError = Status.UNAVAILABLE.withDescription("no backend resolved yet");

  /**
   * A resolved backend, its subchannel ({@code null} while it has none: not yet connected under
   * {@link #oneAtATime}, or closed there because another backend is serving) and its latest state.
   */
  private static final class Backend {
    final EquivalentAddressGroup group;
    final EquivalentAddressGroup resolved;
    Subchannel subchannel;
    ConnectivityStateInfo state = ConnectivityStateInfo.forNonError(ConnectivityState.IDLE);

    Backend(EquivalentAddressGroup group, EquivalentAddressGroup resolved) {
      this.group = group;
      this.resolved = resolved;
    }
  }

  PerBackendLoadBalancer(Helper helper) {
    this.helper = helper;
    PerBackendSessions given;
    try {
      given = helper.getNameResolverArgs().getArg(PerBackendSessions.SESSIONS);
    } catch (UnsupportedOperationException noArgs) {
      given = null; // a helper that does not pass them on: the first call brings the sessions
    }
    if (given != null) {
      attach(given); // in the synchronization context: gRPC makes its balancer there
    }
  }

  @Override
  public Status acceptResolvedAddresses(ResolvedAddresses resolved) {
    List<EquivalentAddressGroup> groups = resolved.getAddresses();
    if (groups.isEmpty()) {
      Status none = Status.UNAVAILABLE.withDescription("name resolution returned no address");
      handleNameResolutionError(none);
      return none;
    }
    Map<EquivalentAddressGroup, Backend> gone = new HashMap<>(backends);
    Map<EquivalentAddressGroup, Backend> now = new LinkedHashMap<>();
    for (EquivalentAddressGroup group : groups) {
      EquivalentAddressGroup key = new EquivalentAddressGroup(group.getAddresses());
      Backend b = gone.remove(key);
      if (b == null) {
        b = new Backend(key, group);
        if (!oneAtATime) {
          connect(b);
        }
      }
      now.put(key, b);
    }
    backends.clear();
    backends.putAll(now);
    for (Backend b : gone.values()) {
      disconnect(b);
    }
    if (oneAtATime) {
      connectInOrder();
    }
    publish();
    return Status.OK;
  }

  /** Makes {@code b}'s subchannel and asks it to connect. */
  private void connect(Backend b) {
    Subchannel subchannel = helper.createSubchannel(CreateSubchannelArgs.newBuilder()
        .setAddresses(b.resolved).setAttributes(Attributes.EMPTY).build());
    b.subchannel = subchannel;
    b.state = ConnectivityStateInfo.forNonError(ConnectivityState.IDLE);
    subchannel.start(state -> onState(b, subchannel, state));
    subchannel.requestConnection();
  }

  /** Closes {@code b}'s subchannel, if it has one; it reads as idle until connected again. */
  private static void disconnect(Backend b) {
    if (b.subchannel != null) {
      b.subchannel.shutdown();
      b.subchannel = null;
      b.state = ConnectivityStateInfo.forNonError(ConnectivityState.IDLE);
    }
  }

  /**
   * Under {@link #oneAtATime}: while no backend is ready, makes sure the first backend in
   * resolution order that has not failed is connecting (backends that failed retry on their own,
   * after gRPC's back-off); once one is ready, closes every other backend's connection.
   */
  private void connectInOrder() {
    Backend serving = null;
    for (Backend b : backends.values()) {
      if (b.subchannel != null && b.state.getState() == ConnectivityState.READY) {
        serving = b;
        break;
      }
    }
    if (serving != null) {
      for (Backend b : backends.values()) {
        if (b != serving) {
          disconnect(b);
        }
      }
      return;
    }
    for (Backend b : backends.values()) {
      if (b.subchannel == null) {
        connect(b);
        return;
      }
      switch (b.state.getState()) {
        case CONNECTING -> {
          return;
        }
        case IDLE -> {
          b.subchannel.requestConnection();
          return;
        }
        default -> { } // failed: on to the next
      }
    }
  }

  @Override
  public void handleNameResolutionError(Status error) {
    lastError = error;
    if (backends.isEmpty()) {
      helper.updateBalancingState(ConnectivityState.TRANSIENT_FAILURE,
          new Picker(List.of(), error));
      if (sessions != null) {
        sessions.backendsChanged(this, List.of(), ConnectivityState.TRANSIENT_FAILURE);
      }
    }
  }

  private void onState(Backend b, Subchannel subchannel, ConnectivityStateInfo state) {
    if (backends.get(b.group) != b || b.subchannel != subchannel) {
      return; // shut down
    }
    b.state = state;
    if (state.getState() == ConnectivityState.TRANSIENT_FAILURE) {
      lastError = state.getStatus();
      helper.refreshNameResolution();
    }
    if (oneAtATime) {
      connectInOrder(); // the next in order after a failure; the others closed once one is ready
    } else if (state.getState() == ConnectivityState.IDLE) {
      subchannel.requestConnection(); // as round_robin: every backend stays connected
    }
    publish();
  }

  /**
   * Tells {@code s} of this balancer: from its making, or from a picker whose calls carry {@code
   * s}, which has not heard of it.
   */
  private void attach(PerBackendSessions s) {
    if (sessions == s) {
      return;
    }
    sessions = s;
    if (s.pickFirst() && !oneAtATime) {
      oneAtATime = true;
      connectInOrder(); // met through a call: every backend was connected as round_robin's
    }
    s.attached(this, view(), aggregate());
  }

  private List<PerBackendSessions.BackendState> view() {
    List<PerBackendSessions.BackendState> list = new ArrayList<>(backends.size());
    for (Backend b : backends.values()) {
      list.add(new PerBackendSessions.BackendState(b.group, b.state.getState()));
    }
    return List.copyOf(list);
  }

  /** The channel's state from its backends': ready if one is, connecting while one may become. */
  private ConnectivityState aggregate() {
    if (backends.isEmpty()) {
      return ConnectivityState.CONNECTING; // resolving
    }
    boolean connecting = false;
    for (Backend b : backends.values()) {
      ConnectivityState s = b.state.getState();
      if (s == ConnectivityState.READY) {
        return ConnectivityState.READY;
      }
      connecting |= s == ConnectivityState.CONNECTING || s == ConnectivityState.IDLE;
    }
    return connecting ? ConnectivityState.CONNECTING : ConnectivityState.TRANSIENT_FAILURE;
  }

  private void publish() {
    ConnectivityState aggregate = aggregate();
    helper.updateBalancingState(aggregate, new Picker(new ArrayList<>(backends.values()), lastError));
    if (sessions != null) {
      sessions.backendsChanged(this, view(), aggregate);
    }
  }

  @Override
  public void shutdown() {
    for (Backend b : backends.values()) {
      disconnect(b);
    }
    backends.clear();
    if (sessions != null) {
      sessions.detached(this);
      sessions = null;
    }
  }

  /**
   * Routes each call to the backend its session chose; others rotate over ready backends. A
   * snapshot, as gRPC's pickers are: the states are those at its making.
   */
  private final class Picker extends SubchannelPicker {
    private final Map<EquivalentAddressGroup, Subchannel> readyByGroup = new HashMap<>();
    private final Map<EquivalentAddressGroup, ConnectivityState> stateOf = new HashMap<>();
    private final List<Subchannel> ready = new ArrayList<>();
    private final java.util.Set<EquivalentAddressGroup> unconnected = new java.util.HashSet<>();
    private final Status error;
    private final boolean anyConnecting;
    private final AtomicInteger next = new AtomicInteger();

    Picker(List<Backend> list, Status error) {
      boolean connecting = false;
      for (Backend b : list) {
        ConnectivityState s = b.state.getState();
        if (b.subchannel == null) {
          unconnected.add(b.group); // one connection at a time: another backend serves
          continue;
        }
        stateOf.put(b.group, s);
        if (s == ConnectivityState.READY) {
          ready.add(b.subchannel);
          readyByGroup.put(b.group, b.subchannel);
        }
        connecting |= s == ConnectivityState.CONNECTING || s == ConnectivityState.IDLE;
      }
      this.error = error;
      this.anyConnecting = connecting;
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      PerBackendSessions.Route route = args.getCallOptions().getOption(PerBackendSessions.ROUTE);
      if (route == null) {
        return rotate(); // a channel given this policy without the sessions
      }
      PerBackendSessions s = route.sessions();
      if (s.balancer() != PerBackendLoadBalancer.this) {
        helper.getSynchronizationContext().execute(() -> attach(s));
      }
      if (route.wake()) {
        return PickResult.withDrop(
            Status.UNAVAILABLE.withDescription(PerBackendSessions.WAKE_DROPPED));
      }
      EquivalentAddressGroup chosen = route.backend();
      if (chosen != null && unconnected.contains(chosen)) {
        // a call its session released after the balancer moved to another backend: it would
        // wait for a connection that is not coming, so it fails as a call to a failed one does
        return PickResult.withError(Status.UNAVAILABLE.withDescription(
            "spillway: backend " + chosen.getAddresses() + " is no longer connected"
            + " (pick_first keeps one connection)"));
      }
      ConnectivityState state = chosen == null ? null : stateOf.get(chosen);
      if (state != null) {
        return switch (state) {
          case READY -> PickResult.withSubchannel(readyByGroup.get(chosen));
          case TRANSIENT_FAILURE -> PickResult.withError(error);
          default -> PickResult.withNoResult(); // connecting: the call waits for the next picker
        };
      }
      // no backend chosen, or one no longer resolved: wherever a plain call would go
      return rotate();
    }

    private PickResult rotate() {
      if (!ready.isEmpty()) {
        return PickResult.withSubchannel(ready.get(Math.floorMod(next.getAndIncrement(), ready.size())));
      }
      return anyConnecting ? PickResult.withNoResult() : PickResult.withError(error);
    }
  }
}
