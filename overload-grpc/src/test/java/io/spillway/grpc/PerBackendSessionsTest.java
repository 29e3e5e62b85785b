package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Deadline;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.NameResolverRegistry;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessSocketAddress;
import io.grpc.stub.StreamObserver;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A plain {@code ManagedChannel} that balances over several backends keeps one Spillway session
 * per backend: each server hears only its own session's calls and credit stream, so one server's
 * credits never release calls bound for another. Servers are in-process behind a scripted name
 * resolver; gates run in virtual time.
 */
class PerBackendSessionsTest {

  private static final long MS = 1_000_000;
  private static final Duration SLO = Duration.ofMillis(5);
  /** Resolves targets to in-process servers; registered where channel builders look. */
  private final ScriptedNameResolver resolver = ScriptedNameResolver.in(
      NameResolverRegistry.getDefaultRegistry(), InProcessSocketAddress.class);

  private final VirtualClock clock = new VirtualClock();
  private final OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(5 * MS, 100_000));

  private SpillwayGrpcServer server() {
    return SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock).parallelism(1)
        .queueDelay(QueueDelaySignal.NONE).build();
  }

  /** Per-backend sessions that admit every call (NoControl), on the virtual clock. */
  private PerBackendSessions sessionsWithoutControl() {
    return SpillwayGrpc.perBackend(io.spillway.api.NoControl.INSTANCE).slo(SLO).ticker(clock)
        .scheduler(clock).build();
  }

  /** Makes {@code n} unary calls on {@code channel}, one after another; each must end OK. */
  private static void callsOk(ManagedChannel channel, int n, String message) {
    for (int i = 0; i < n; i++) {
      assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, message).await().status().getCode());
    }
  }

  /** A channel to the scripted backends, with per-backend sessions installed. */
  private ManagedChannel channel(PerBackendSessions sessions) {
    InProcessChannelBuilder builder = InProcessChannelBuilder.forTarget(resolver.target("svc"))
        .directExecutor();
    sessions.install(builder);
    return sessions.closeOnShutdown(builder.build());
  }

  @Test
  void eachServerHearsOnlyItsOwnSessionSoCreditsNeverCrossBackends() {
    List<StreamObserver<String>> heldByB = new CopyOnWriteArrayList<>();
    Seen seenByA = new Seen();
    Seen seenByB = new Seen();
    try (SpillwayGrpcServer a = server(); SpillwayGrpcServer b = server();
        InProcess backendA = new InProcess(ServerInterceptors.intercept(
            a.intercept(Echo.service(Echo.ECHO)), seenByA),
            ServerInterceptors.intercept(a.controlService(), seenByA));
        InProcess backendB = new InProcess(ServerInterceptors.intercept(
            b.intercept(Echo.service((m, req, out) -> heldByB.add(out))), seenByB),
            ServerInterceptors.intercept(b.controlService(), seenByB))) {
      resolver.next = List.of(backendA.address(), backendB.address());
      PerBackendSessions sessions = SpillwayGrpc.perBackend(breakwater).slo(SLO).ticker(clock)
          .scheduler(clock).build();
      ManagedChannel channel = channel(sessions);
      try {
        List<Calls.Handle> handles = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
          handles.add(Calls.unary(channel, Echo.UNARY, "x" + i));
        }
        Map<List<SocketAddress>, SpillwayClientInterceptor> byBackend = sessions.sessions();
        assertEquals(2, byBackend.size(), "a session per backend: " + byBackend.keySet());
        SpillwayClientInterceptor sessionA = byBackend.get(List.of(backendA.address()));
        SpillwayClientInterceptor sessionB = byBackend.get(List.of(backendB.address()));
        assertNotEquals(sessionA.sessionId(), sessionB.sessionId());

        assertEquals(Set.of(String.valueOf(sessionA.sessionId())), seenByA.sessions(),
            "server A heard only session A");
        assertEquals(Set.of(String.valueOf(sessionB.sessionId())), seenByB.sessions(),
            "server B heard only session B");
        assertEquals(1, seenByA.calls(MethodDescriptorName.CREDITS), "A's credit stream went to A");
        assertEquals(1, seenByB.calls(MethodDescriptorName.CREDITS), "B's credit stream went to B");

        // B granted one credit and holds the call it released; A's answers released none of
        // the calls waiting in B's session
        String idB = String.valueOf(sessionB.sessionId());
        assertEquals(1, seenByB.calls.stream().filter(c -> c.method().equals(Echo.UNARY.getFullMethodName())
            && idB.equals(c.session())).count(), "B's session sent one call, on B's one credit");
        assertTrue(sessionB.queued() > 0, "calls wait in B's session");
        long atA = seenByA.calls(MethodDescriptorName.ECHO);
        long atB = seenByB.calls(MethodDescriptorName.ECHO);
        assertEquals(atA, handles.stream().filter(h -> h.reply().isDone()).count(),
            "every call answered was A's");
        assertEquals(60, atA + atB + sessionA.queued() + sessionB.queued(),
            "every call was sent or waits in its own backend's session");
      } finally {
        heldByB.forEach(o -> {
          o.onNext("late");
          o.onCompleted();
        });
        channel.shutdownNow();
      }
    }
  }

  /** What one server heard: each call's method and session. */
  private static final class Seen implements io.grpc.ServerInterceptor {
    record Call(String method, String session) { }

    final List<Call> calls = new CopyOnWriteArrayList<>();

    @Override
    public <ReqT, RespT> io.grpc.ServerCall.Listener<ReqT> interceptCall(
        io.grpc.ServerCall<ReqT, RespT> call, Metadata headers,
        io.grpc.ServerCallHandler<ReqT, RespT> next) {
      calls.add(new Call(call.getMethodDescriptor().getFullMethodName(),
          headers.get(SpillwayMetadata.SESSION)));
      return next.startCall(call, headers);
    }

    Set<String> sessions() {
      return calls.stream().map(Call::session).filter(java.util.Objects::nonNull)
          .collect(Collectors.toSet());
    }

    long calls(MethodDescriptorName name) {
      return calls.stream().filter(c -> c.method().equals(name.fullName)).count();
    }
  }

  private enum MethodDescriptorName {
    CREDITS(SpillwayControlService.CREDITS.getFullMethodName()),
    ECHO(Echo.UNARY.getFullMethodName());

    final String fullName;

    MethodDescriptorName(String fullName) {
      this.fullName = fullName;
    }
  }

  /** A backend the resolution adds gets a session of its own and its share of the calls. */
  @Test
  void aBackendThatJoinsGetsASessionAndCalls() {
    Seen seenByA = new Seen();
    Seen seenByB = new Seen();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByA));
        InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByB))) {
      resolver.next = List.of(a.address());
      PerBackendSessions sessions = sessionsWithoutControl();
      ManagedChannel channel = channel(sessions);
      try {
        callsOk(channel, 5, "x");
        assertEquals(Set.of(List.of(a.address())), sessions.sessions().keySet());
        assertEquals(0, seenByB.calls(MethodDescriptorName.ECHO));

        resolver.publish(List.of(a.address(), b.address()));
        callsOk(channel, 20, "y");
        assertEquals(2, sessions.sessions().size());
        assertTrue(seenByB.calls(MethodDescriptorName.ECHO) > 0, "the new backend takes calls");
        assertEquals(1, seenByB.sessions().size(), "through a session of its own");
        assertFalse(seenByA.sessions().containsAll(seenByB.sessions()));
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * With pickFirst every call goes to the first backend in resolution order, through its one
   * session and its one connection, as gRPC's pick_first sends them: the second backend is never
   * connected, and a new resolution that puts it first keeps the connected one.
   */
  @Test
  void pickFirstSendsEveryCallToTheFirstBackendOverOneConnection() {
    Seen seenByA = new Seen();
    Seen seenByB = new Seen();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByA));
        InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByB))) {
      resolver.next = List.of(a.address(), b.address());
      PerBackendSessions sessions = SpillwayGrpc.perBackend(io.spillway.api.NoControl.INSTANCE)
          .slo(SLO).ticker(clock).scheduler(clock).pickFirst().build();
      ManagedChannel channel = channel(sessions);
      try {
        callsOk(channel, 10, "x");
        assertEquals(10, seenByA.calls(MethodDescriptorName.ECHO));
        assertEquals(0, seenByB.calls(MethodDescriptorName.ECHO));
        assertEquals(Set.of(List.of(a.address())), sessions.sessions().keySet(), "one session, A's");
        assertEquals(1, a.connections(), "one connection, to A");
        assertEquals(0, b.connections(), "none to B");

        resolver.publish(List.of(b.address(), a.address()));
        callsOk(channel, 10, "y");
        assertEquals(20, seenByA.calls(MethodDescriptorName.ECHO), "A kept: still resolved, connected");
        assertEquals(0, seenByB.calls(MethodDescriptorName.ECHO));
        assertEquals(0, b.connections());
        assertEquals(0, sessions.plainCalls());
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * With pickFirst the channel tries the backends in order, one at a time: an unreachable first
   * backend is passed over for the second, the third stays unconnected, and when the second goes
   * away the calls move to the third, in a session of its own.
   */
  @Test
  void pickFirstMovesDownTheResolutionOneConnectionAtATime() {
    Seen seenByA = new Seen();
    Seen seenByB = new Seen();
    InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByA));
    try (a; InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByB))) {
      SocketAddress nobody = new InProcessSocketAddress("nobody-" + java.util.UUID.randomUUID());
      resolver.next = List.of(nobody, a.address(), b.address());
      PerBackendSessions sessions = SpillwayGrpc.perBackend(io.spillway.api.NoControl.INSTANCE)
          .slo(SLO).ticker(clock).scheduler(clock).pickFirst().build();
      ManagedChannel channel = channel(sessions);
      try {
        callsOk(channel, 10, "x");
        assertEquals(10, seenByA.calls(MethodDescriptorName.ECHO));
        assertEquals(1, a.connections());
        assertEquals(0, b.connections(), "B not connected while A serves");

        a.close();
        callsOk(channel, 10, "y");
        assertEquals(10, seenByB.calls(MethodDescriptorName.ECHO), "B took over");
        assertEquals(1, b.connections());
        assertEquals(1, seenByB.sessions().size());
        assertFalse(seenByA.sessions().containsAll(seenByB.sessions()), "B's calls in B's own session");
        assertEquals(0, sessions.plainCalls());
      } finally {
        channel.shutdownNow();
      }
    }
  }

  @Test
  void aBackendThatLeavesTheResolutionClosesItsSessionOnceNothingWaits() {
    try (InProcess a = new InProcess(Echo.service(Echo.ECHO));
        InProcess b = new InProcess(Echo.service(Echo.ECHO))) {
      resolver.next = List.of(a.address(), b.address());
      PerBackendSessions sessions = sessionsWithoutControl();
      ManagedChannel channel = channel(sessions);
      try {
        callsOk(channel, 10, "x");
        assertEquals(2, sessions.sessions().size());
        SpillwayClientInterceptor sessionB = sessions.sessions().get(List.of(b.address()));

        resolver.publish(List.of(a.address()));
        assertEquals(Set.of(List.of(a.address())), sessions.sessions().keySet());
        callsOk(channel, 10, "y");
        assertFalse(isClosed(sessionB), "closed before one SLO had passed");
        clock.advance(SLO.toNanos());
        assertTrue(isClosed(sessionB), "closed once nothing waited in it");
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /** A closed session fails a call at once with UNAVAILABLE; an open one sends it. */
  private static boolean isClosed(SpillwayClientInterceptor session) {
    try (InProcess probe = new InProcess(Echo.service(Echo.ECHO))) {
      ManagedChannel ch = probe.channel();
      Calls.Reply r = Calls.unary(io.grpc.ClientInterceptors.intercept(ch, session), Echo.UNARY, "p")
          .await();
      return r.status().getCode() == Status.Code.UNAVAILABLE;
    }
  }

  /**
   * A fresh channel's first call waits in a backend's session like every later one: the balancer
   * knows the sessions from its making, so nothing goes out plain, and the call that wakes the
   * channel never reaches a server.
   */
  @Test
  void theFirstCallOfAFreshChannelGoesThroughASession() {
    Seen seen = new Seen();
    try (SpillwayGrpcServer a = server();
        InProcess backend = new InProcess(ServerInterceptors.intercept(
            a.intercept(Echo.service(Echo.ECHO)), seen),
            ServerInterceptors.intercept(a.controlService(), seen))) {
      resolver.next = List.of(backend.address());
      PerBackendSessions sessions = SpillwayGrpc.perBackend(breakwater).slo(SLO).ticker(clock)
          .scheduler(clock).build();
      ManagedChannel channel = channel(sessions);
      try {
        assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "first").await().status().getCode());
        assertEquals(0, sessions.plainCalls());
        assertEquals(1, seen.calls(MethodDescriptorName.ECHO));
        assertEquals(Set.of(String.valueOf(sessions.sessions().get(List.of(backend.address()))
            .sessionId())), seen.sessions(), "the first call carried the backend's session");
        assertTrue(seen.calls.stream().noneMatch(c -> c.method().equals(PerBackendSessions.WAKE_METHOD)));
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * A call made while name resolution has not answered is held, not sent plain, for as long as gRPC
   * would hold it (past the SLO); once a backend is ready it goes through that backend's session.
   * One whose deadline passes while held ends at its deadline, as gRPC ends it.
   */
  @Test
  void aCallMadeBeforeAnyBackendIsReadyWaitsForOne() throws Exception {
    Seen seen = new Seen();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seen))) {
      resolver.silent = true;
      PerBackendSessions sessions = sessionsWithoutControl();
      ManagedChannel channel = channel(sessions);
      try {
        Calls.Handle held = Calls.unary(channel, Echo.UNARY, "held");
        clock.advance(10 * SLO.toNanos());
        assertFalse(held.reply().isDone());
        assertEquals(0, sessions.plainCalls());
        resolver.publish(List.of(a.address()));
        assertEquals(Status.Code.OK, held.await().status().getCode());
        assertEquals(0, sessions.plainCalls());
        assertEquals(1, seen.sessions().size(), "the held call went through the backend's session");

        channel.enterIdle(); // the balancer goes; the next call wakes the channel again
        resolver.silent = true;
        Deadline.Ticker virtual = new Deadline.Ticker() {
          @Override
          public long nanoTime() {
            return clock.read();
          }
        };
        CompletableFuture<Status> late = new CompletableFuture<>();
        ClientCall<String, String> call = channel.newCall(Echo.UNARY,
            CallOptions.DEFAULT.withDeadline(Deadline.after(20, TimeUnit.MILLISECONDS, virtual)));
        call.start(new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            late.complete(status);
          }
        }, new Metadata());
        call.sendMessage("late");
        call.halfClose();
        clock.advance(20 * MS - 1);
        assertFalse(late.isDone());
        clock.advance(1);
        // gRPC ends it on its own timer thread: a pending call of a channel that left idle
        assertEquals(Status.Code.DEADLINE_EXCEEDED, late.get(10, TimeUnit.SECONDS).getCode(),
            "ended at its deadline");
        resolver.publish(List.of(a.address()));
        assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "again").await().status().getCode());
        assertEquals(2, seen.calls(MethodDescriptorName.ECHO), "the late call was never sent");
        assertEquals(0, seen.calls.stream().filter(c -> c.session() == null).count());
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * A held call is made, once a backend is ready, in its caller's gRPC context, as a call made at
   * once would be: the caller's deadline reaches the server, and cancelling the caller's context
   * (as gRPC does to a server handler's downstream calls when its own call ends) cancels it there;
   * cancelled while still held, it is never sent.
   */
  @Test
  void aHeldCallKeepsItsCallersDeadlineAndCancellation() throws Exception {
    List<Deadline> deadlines = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> cancelledAtServer = new CompletableFuture<>();
    Echo.Handler keep = (method, request, out) -> {
      deadlines.add(io.grpc.Context.current().getDeadline());
      io.grpc.Context.current().addListener(c -> cancelledAtServer.complete(null), Runnable::run);
    };
    java.util.concurrent.ScheduledExecutorService timers =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
    try (InProcess a = new InProcess(Echo.service(keep))) {
      resolver.silent = true;
      PerBackendSessions sessions = sessionsWithoutControl();
      ManagedChannel channel = channel(sessions);
      io.grpc.Context.CancellableContext caller = io.grpc.Context.current()
          .withDeadlineAfter(1, TimeUnit.HOURS, timers);
      try {
        Calls.Handle held = caller.call(() -> Calls.unary(channel, Echo.UNARY, "held"));
        assertTrue(deadlines.isEmpty());
        resolver.publish(List.of(a.address()));
        assertEquals(1, deadlines.size(), "the held call reached the server");
        assertTrue(deadlines.get(0) != null, "with its caller's deadline");
        caller.cancel(null);
        assertTrue(cancelledAtServer.isDone(), "the caller's cancellation reached the server");
        assertEquals(Status.Code.CANCELLED, held.await().status().getCode());
        assertEquals(0, sessions.plainCalls());

        // cancelled while still held: it is never sent (while name resolution has not answered,
        // gRPC itself ends a call whose context was cancelled once the resolution comes)
        channel.enterIdle();
        resolver.silent = true;
        io.grpc.Context.CancellableContext second = io.grpc.Context.current().withCancellation();
        Calls.Handle gaveUp = second.call(() -> Calls.unary(channel, Echo.UNARY, "gave up"));
        second.cancel(null);
        resolver.publish(List.of(a.address()));
        assertEquals(Status.Code.CANCELLED, gaveUp.await().status().getCode());
        assertEquals(1, deadlines.size(), "the call cancelled while held was never sent");
      } finally {
        caller.cancel(null);
        channel.shutdownNow();
      }
    } finally {
      timers.shutdownNow();
    }
  }

  /**
   * The call that wakes an idle channel belongs to the channel, not to the caller whose call woke
   * it: that caller's context ending (its deadline passing, its own call cancelled) while the
   * channel resolves neither sends the other held calls plain nor makes the sessions take the
   * channel for one under another policy.
   */
  @Test
  void aWakingCallersCancelledContextDoesNotEndTheHolding() throws Exception {
    Seen seen = new Seen();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seen))) {
      resolver.silent = true;
      PerBackendSessions sessions = sessionsWithoutControl();
      ManagedChannel channel = channel(sessions);
      io.grpc.Context.CancellableContext first = io.grpc.Context.current().withCancellation();
      try {
        Calls.Handle woke = first.call(() -> Calls.unary(channel, Echo.UNARY, "woke"));
        Calls.Handle other = Calls.unary(channel, Echo.UNARY, "other");
        first.cancel(null);
        resolver.publish(List.of(a.address()));
        assertEquals(Status.Code.CANCELLED, woke.await().status().getCode());
        assertEquals(Status.Code.OK, other.await().status().getCode());
        callsOk(channel, 5, "after");
        assertEquals(6, seen.calls(MethodDescriptorName.ECHO));
        assertEquals(0, seen.calls.stream().filter(c -> c.session() == null).count(),
            "every call the server heard came through a session");
      } finally {
        first.cancel(null);
        channel.shutdownNow();
      }
    }
  }

  /** A call the application cancels while it is held ends with its cancellation, unsent. */
  @Test
  void aHeldCallThatIsCancelledEndsCancelled() {
    Seen seen = new Seen();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seen))) {
      resolver.silent = true;
      PerBackendSessions sessions = sessionsWithoutControl();
      ManagedChannel channel = channel(sessions);
      try {
        Calls.Handle held = Calls.unary(channel, Echo.UNARY, "held");
        held.call().cancel("the caller gave up", null);
        Calls.Reply reply = held.await();
        assertEquals(Status.Code.CANCELLED, reply.status().getCode());
        resolver.publish(List.of(a.address()));
        assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "x").await().status().getCode());
        assertEquals(1, seen.calls(MethodDescriptorName.ECHO), "the cancelled call was never sent");
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * While every backend is failing a call is not held: it goes plain at once, and gRPC fails it as
   * it fails any call on a channel that cannot connect.
   */
  @Test
  void whileEveryBackendFailsACallIsNotHeld() {
    resolver.next = List.of(new InProcessSocketAddress("nobody-" + System.nanoTime()));
    PerBackendSessions sessions = sessionsWithoutControl();
    ManagedChannel channel = channel(sessions);
    try {
      for (int i = 0; i < 3; i++) {
        assertEquals(Status.Code.UNAVAILABLE,
            Calls.unary(channel, Echo.UNARY, "x").await().status().getCode(),
            "failed without the clock moving");
      }
      assertEquals(3, sessions.plainCalls());
    } finally {
      channel.shutdownNow();
    }
  }

  /**
   * A channel whose policy is not Spillway's (here round_robin set after install) sends every call
   * as a plain call, and every call is answered: the call that wakes the channel is answered by
   * the server instead of dropped by Spillway's balancer, which tells the sessions to hold nothing.
   */
  @Test
  void underAnotherPolicyCallsGoPlainAndStillSucceed() {
    try (InProcess a = new InProcess(Echo.service(Echo.ECHO));
        InProcess b = new InProcess(Echo.service(Echo.ECHO))) {
      resolver.next = List.of(a.address(), b.address());
      PerBackendSessions sessions = sessionsWithoutControl();
      InProcessChannelBuilder builder = InProcessChannelBuilder.forTarget(resolver.target("svc"))
          .directExecutor();
      sessions.install(builder);
      builder.defaultLoadBalancingPolicy("round_robin");
      ManagedChannel channel = sessions.closeOnShutdown(builder.build());
      try {
        callsOk(channel, 20, "x");
        assertEquals(20, sessions.plainCalls());
        assertTrue(sessions.sessions().isEmpty());
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * Under another policy, a server that holds the wake-up call unanswered: the first call is held
   * for the SLO, then it and every later call go plain, and the wake-up call is cancelled.
   */
  @Test
  void underAnotherPolicyAnUnansweredWakeUpEndsTheHoldingAtTheSlo() {
    List<io.grpc.ServerCall<byte[], byte[]>> wakes = new CopyOnWriteArrayList<>();
    List<Status> wakeEnds = new CopyOnWriteArrayList<>();
    io.grpc.MethodDescriptor<byte[], byte[]> wake = io.grpc.MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(PerBackendSessions.WAKE_METHOD)
        .setRequestMarshaller(ControlMarshallers.BYTES).setResponseMarshaller(ControlMarshallers.BYTES)
        .build();
    io.grpc.ServerServiceDefinition holdsWakes = io.grpc.ServerServiceDefinition
        .builder(wake.getServiceName())
        .addMethod(wake, (call, headers) -> {
          wakes.add(call);
          return new io.grpc.ServerCall.Listener<>() {
            @Override
            public void onCancel() {
              wakeEnds.add(Status.CANCELLED);
            }
          };
        }).build();
    try (InProcess a = new InProcess(Echo.service(Echo.ECHO), holdsWakes)) {
      resolver.next = List.of(a.address());
      PerBackendSessions sessions = sessionsWithoutControl();
      InProcessChannelBuilder builder = InProcessChannelBuilder.forTarget(resolver.target("svc"))
          .directExecutor();
      sessions.install(builder);
      builder.defaultLoadBalancingPolicy("round_robin");
      ManagedChannel channel = sessions.closeOnShutdown(builder.build());
      try {
        Calls.Handle first = Calls.unary(channel, Echo.UNARY, "first");
        assertFalse(first.reply().isDone());
        assertEquals(1, wakes.size(), "round_robin sent the wake-up call to the server");
        clock.advance(SLO.toNanos());
        assertEquals(Status.Code.OK, first.await().status().getCode());
        assertEquals(List.of(Status.CANCELLED), wakeEnds, "the wake-up call was cancelled");
        callsOk(channel, 5, "x");
        assertEquals(6, sessions.plainCalls());
        assertEquals(1, wakes.size());
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * With retry to a replica, a call that one backend refuses fast goes once to the other, within
   * the retry budget's share; a retried call is never sent a third time.
   */
  @Test
  void aFastRejectIsRetriedOnceOnTheOtherBackendWithinTheShare() {
    ScriptedGate rejecting = new ScriptedGate();
    rejecting.decide = r -> io.spillway.api.Status.REJECTED_AQM;
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(rejecting, clock)));
        InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(new ScriptedGate(), clock)))) {
      resolver.next = List.of(a.address(), b.address());
      PerBackendSessions sessions = SpillwayGrpc.perBackend(io.spillway.api.NoControl.INSTANCE)
          .slo(SLO).ticker(clock).scheduler(clock).retryToReplica(0.1).build();
      ManagedChannel channel = channel(sessions);
      try {
        int ok = 0;
        int refused = 0;
        for (int i = 0; i < 200; i++) {
          Status.Code code = Calls.unary(channel, Echo.UNARY, "x" + i).await().status().getCode();
          ok += code == Status.Code.OK ? 1 : 0;
          refused += code == Status.Code.RESOURCE_EXHAUSTED ? 1 : 0;
        }
        assertEquals(200, ok + refused);
        int retries = sessions.retries();
        assertTrue(retries > 0 && retries <= 10 + 20, "retries within the budget: " + retries);
        assertEquals(rejecting.requests.size() - retries, refused,
            "every retry was answered by the other backend, and none went back to the first");
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * A fast reject is retried on another backend only: with no other backend ready (the other is
   * unreachable), the reject is the answer, and the backend that refused the call does not get
   * it a second time at once.
   */
  @Test
  void aFastRejectIsNotRetriedOnTheBackendThatRefusedIt() {
    ScriptedGate rejecting = new ScriptedGate();
    rejecting.decide = r -> io.spillway.api.Status.REJECTED_AQM;
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(rejecting, clock)))) {
      resolver.next = List.of(a.address(),
          new InProcessSocketAddress("spillway-nobody-" + System.identityHashCode(this)));
      PerBackendSessions sessions = SpillwayGrpc.perBackend(io.spillway.api.NoControl.INSTANCE)
          .slo(SLO).ticker(clock).scheduler(clock).retryToReplica(1.0).build();
      ManagedChannel channel = channel(sessions);
      try {
        Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "x").await();
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode());
        assertEquals(1, rejecting.requests.size(),
            "the retry went back to the backend that refused the call");
        assertEquals(0, sessions.retries());
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * Sessions closed while a call is in flight stay closed: the call's retry after a fast reject
   * does not make a session for another backend, which nothing would close and whose credit
   * stream would keep its channel from terminating.
   */
  @Test
  void aRetryAfterTheSessionsClosedMakesNoNewSession() {
    PerBackendSessions[] sessions = new PerBackendSessions[1];
    ScriptedGate rejecting = new ScriptedGate();
    rejecting.decide = r -> {
      sessions[0].close(); // the application closes the sessions while the call is in flight
      return io.spillway.api.Status.REJECTED_AQM;
    };
    try (SpillwayGrpcServer serverB = server();
        InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(rejecting, clock)));
        InProcess b = new InProcess(serverB.intercept(Echo.service(Echo.ECHO)),
            serverB.controlService())) {
      resolver.next = List.of(a.address(), b.address());
      sessions[0] = SpillwayGrpc.perBackend(breakwater).slo(SLO).ticker(clock).scheduler(clock)
          .retryToReplica(1.0).build();
      InProcessChannelBuilder builder = InProcessChannelBuilder.forTarget(resolver.target("svc"))
          .directExecutor();
      sessions[0].install(builder);
      ManagedChannel channel = builder.build(); // the application closes the sessions itself
      try {
        Calls.unary(channel, Echo.UNARY, "x").await();
        assertEquals(1, rejecting.requests.size(), "the call went to A first");
        assertEquals(0, serverB.control().subscribers(),
            "a session made after close() holds a credit stream open to B");
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * With grpc-services on the class path, a service config's client-side health checks run on the
   * policy's subchannels as on round_robin's: a backend whose health service says NOT_SERVING takes
   * no calls, and takes them again once it says SERVING.
   */
  @Test
  void aBackendWhoseHealthServiceSaysNotServingTakesNoCalls() {
    io.grpc.protobuf.services.HealthStatusManager healthB = new io.grpc.protobuf.services.HealthStatusManager();
    healthB.setStatus("", io.grpc.health.v1.HealthCheckResponse.ServingStatus.NOT_SERVING);
    io.grpc.protobuf.services.HealthStatusManager healthA = new io.grpc.protobuf.services.HealthStatusManager();
    Seen seenByA = new Seen();
    Seen seenByB = new Seen();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByA),
            healthA.getHealthService().bindService());
        InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByB),
            healthB.getHealthService().bindService())) {
      resolver.next = List.of(a.address(), b.address());
      PerBackendSessions sessions = sessionsWithoutControl();
      InProcessChannelBuilder builder = InProcessChannelBuilder.forTarget(resolver.target("svc"))
          .directExecutor()
          .defaultServiceConfig(Map.of("healthCheckConfig", Map.of("serviceName", "")));
      sessions.install(builder);
      ManagedChannel channel = sessions.closeOnShutdown(builder.build());
      try {
        callsOk(channel, 20, "x");
        assertEquals(0, seenByB.calls(MethodDescriptorName.ECHO), "B says NOT_SERVING");
        assertEquals(20, seenByA.calls(MethodDescriptorName.ECHO));

        healthB.setStatus("", io.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING);
        int calls = 0;
        while (seenByB.calls(MethodDescriptorName.ECHO) == 0 && calls < 1_000) {
          assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "y").await().status().getCode());
          calls++;
        }
        assertTrue(seenByB.calls(MethodDescriptorName.ECHO) > 0, "B serving again takes calls");
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /** A builder for one address given directly takes no policy: one session, used from the first call. */
  @Test
  void aChannelToOneDirectAddressHasOneSessionFromItsFirstCall() {
    List<StreamObserver<String>> held = new CopyOnWriteArrayList<>();
    try (SpillwayGrpcServer a = server();
        InProcess backend = new InProcess(a.intercept(Echo.service((m, req, out) -> held.add(out))),
            a.controlService())) {
      PerBackendSessions sessions = SpillwayGrpc.perBackend(breakwater).slo(SLO).ticker(clock)
          .scheduler(clock).build();
      InProcessChannelBuilder builder = InProcessChannelBuilder
          .forAddress(backend.address()).directExecutor();
      sessions.install(builder);
      ManagedChannel channel = sessions.closeOnShutdown(builder.build());
      try {
        for (int i = 0; i < 3; i++) {
          Calls.unary(channel, Echo.UNARY, "x" + i);
        }
        assertEquals(1, sessions.sessions().size());
        SpillwayClientInterceptor only = sessions.sessions().values().iterator().next();
        assertEquals(1, held.size(), "the first call already waited for the session's one credit");
        assertEquals(2, only.queued());
        assertEquals(0, sessions.plainCalls());
      } finally {
        held.forEach(o -> {
          o.onNext("late");
          o.onCompleted();
        });
        channel.shutdownNow();
      }
    }
  }

  /**
   * Over real sockets (grpc-netty-shaded), each backend's session reaches its own server; one
   * session on a round_robin channel over the same servers is answered by both, and says so.
   */
  @Test
  void onSocketsEachServerHearsItsOwnSession() throws Exception {
    Seen seenByA = new Seen();
    Seen seenByB = new Seen();
    io.grpc.Server a = io.grpc.ServerBuilder.forPort(0)
        .addService(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByA)).build().start();
    io.grpc.Server b = io.grpc.ServerBuilder.forPort(0)
        .addService(ServerInterceptors.intercept(Echo.service(Echo.ECHO), seenByB)).build().start();
    try {
      List<SocketAddress> addresses = List.of(
          new java.net.InetSocketAddress("127.0.0.1", a.getPort()),
          new java.net.InetSocketAddress("127.0.0.1", b.getPort()));
      PerBackendSessions sessions = SpillwayGrpc.perBackend(io.spillway.api.NoControl.INSTANCE)
          .slo(SLO).build();
      ScriptedNameResolver sockets = ScriptedNameResolver.in(
          NameResolverRegistry.getDefaultRegistry(), java.net.InetSocketAddress.class);
      sockets.next = addresses;
      io.grpc.ManagedChannelBuilder<?> builder = io.grpc.ManagedChannelBuilder
          .forTarget(sockets.target("svc")).usePlaintext();
      sessions.install(builder);
      ManagedChannel channel = sessions.closeOnShutdown(builder.build());
      try {
        callsOk(channel, 40, "x");
        assertEquals(2, sessions.sessions().size());
        Set<String> atA = seenByA.sessions();
        Set<String> atB = seenByB.sessions();
        assertEquals(1, atA.size(), "A heard one session: " + atA);
        assertEquals(1, atB.size(), "B heard one session: " + atB);
        assertNotEquals(atA, atB);
        assertTrue(sessions.sessions().values().stream()
            .noneMatch(SpillwayClientInterceptor::answeredBySeveralServers));

        // the same channel shape with ONE session: answers from both servers, and it says so
        SpillwayClientInterceptor one = SpillwayGrpc.client(io.spillway.api.NoControl.INSTANCE)
            .slo(SLO).build();
        ManagedChannel roundRobin = io.grpc.ManagedChannelBuilder.forTarget(sockets.target("svc"))
            .usePlaintext().defaultLoadBalancingPolicy("round_robin").intercept(one).build();
        try {
          for (int i = 0; i < 40; i++) {
            assertEquals(Status.Code.OK, Calls.unary(roundRobin, Echo.UNARY, "y").await().status().getCode());
          }
          assertTrue(one.answeredBySeveralServers(), "one session answered by both servers");
        } finally {
          one.close();
          roundRobin.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
        }
      } finally {
        channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
      }
    } finally {
      a.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
      b.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
  }
}
