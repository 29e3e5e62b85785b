package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.EquivalentAddressGroup;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusOr;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.spring.internal.SpillwayAutoConfiguration;
import io.spillway.spring.internal.SpillwayGrpcAutoConfiguration;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.grpc.client.GrpcChannelFactory;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/**
 * A channel that Spring gRPC's own client auto-configuration builds from a channel's properties,
 * whose target resolves to two servers: Spring gRPC sets {@code round_robin}, the starter's
 * customizer runs after it and installs per-backend sessions, and each server hears only its own
 * session. Real sockets (grpc-netty-shaded), both servers protected by the starter.
 */
class SpringGrpcChannelsTest {

  private static final String SCHEME = "spillway-spring-test";
  private static final List<SocketAddress> ADDRESSES = new CopyOnWriteArrayList<>();

  static {
    NameResolverRegistry.getDefaultRegistry().register(new FixedAddresses());
  }

  private static final MethodDescriptor<String, String> PING = StringMethods.unary("test.Ping/Ping");

  @Test
  void aSpringGrpcChannelOverTwoServersKeepsASessionPerServer() {
    run(new String[0], (wiring, atA, atB) -> {
      assertThat(wiring.channelSessions()).hasSize(1);
      assertThat(wiring.channelSessions().get(0).sessions()).as("a session per server").hasSize(2);
      assertThat(atA.ids()).as("server A heard one session").hasSize(1);
      assertThat(atB.ids()).as("server B heard one session").hasSize(1);
      assertThat(atA.ids()).doesNotContainAnyElementsOf(atB.ids());
      // no call went plain, the channel's first neither: it waited for a backend and its session
      assertThat(wiring.state().get("channels")).as("the Actuator endpoint's view")
          .isEqualTo(List.of(java.util.Map.of("backends", 2, "sloNanos", 100_000_000L, "queued", 0,
              "plainCalls", 0, "retries", 0)));
    });
  }

  /**
   * A channel whose properties ask for pick_first keeps it: every call goes to the first server,
   * through that server's session; the other hears nothing. (Without it, both servers take calls.)
   */
  @Test
  void aChannelConfiguredForPickFirstUsesTheFirstServerOnly() {
    run(new String[] {"spring.grpc.client.channels.inventory.default-load-balancing-policy=pick_first"},
        (wiring, atA, atB) -> {
          assertThat(atA.ids()).as("server A heard one session").hasSize(1);
          assertThat(atB.ids()).as("server B heard nothing").isEmpty();
          assertThat(wiring.channelSessions().get(0).sessions()).hasSize(1);
          assertThat(wiring.channelSessions().get(0).plainCalls()).isZero();
        });
  }

  /** The channels' sessions take spillway.client.slo when it is set, as the HTTP clients' do. */
  @Test
  void theChannelsSessionsTakeTheClientSlo() {
    run(new String[] {"spillway.client.slo=7ms"}, (wiring, atA, atB) ->
        assertThat(wiring.channelSessions().get(0).sessions().values())
            .allSatisfy(s -> assertThat(s.sloNanos()).isEqualTo(7_000_000L)));
  }

  /**
   * A call made while serving an HTTP request (its budget bound by the starter's filter, here by
   * hand) carries what is left of that budget to the server, as the HTTP clients' filter does.
   */
  @Test
  void aCallMadeWhileServingARequestCarriesItsBudget() {
    run(new String[0], (wiring, atA, atB) -> { }, channel -> {
      io.spillway.api.RequestBudget budget = io.spillway.api.RequestBudget.of(7_000_000);
      return ScopedValue.where(io.spillway.api.RequestBudget.CURRENT, budget)
          .call(() -> call(channel, "budgeted"));
    }, (atA, atB) -> {
      List<String> budgets = new java.util.ArrayList<>(atA.budgets);
      budgets.addAll(atB.budgets);
      assertThat(budgets).containsExactly("7000000");
    });
  }

  /**
   * What the default avoids: with one session per channel, Spring gRPC's round_robin spreads that
   * one session's calls, released by either server's credits, over both servers.
   */
  @Test
  void withOneSessionPerChannelBothServersHearTheSameSession() {
    run(new String[] {"spillway.client.grpc-session-per-backend=false"}, (wiring, atA, atB) -> {
      assertThat(wiring.channelSessions()).isEmpty();
      assertThat(atA.ids()).hasSize(1).isEqualTo(atB.ids());
    });
  }

  private interface Check {
    void check(SpillwayGrpcAutoConfiguration.GrpcWiring wiring, Sessions atA, Sessions atB);
  }

  private interface ExtraCall {
    String call(ManagedChannel channel) throws Exception;
  }

  private interface ServersCheck {
    void check(Sessions atA, Sessions atB);
  }

  /** Two protected servers, 40 calls on the channel Spring gRPC builds for them, then the check. */
  private static void run(String[] properties, Check check) {
    run(properties, check, null, null);
  }

  /** As above, then {@code extra} on the same channel, and {@code after} on what the servers heard. */
  private static void run(String[] properties, Check check, ExtraCall extra, ServersCheck after) {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class,
            GrpcClientAutoConfiguration.class, CompositeChannelFactoryAutoConfiguration.class,
            SpillwayAutoConfiguration.class, SpillwayGrpcAutoConfiguration.class))
        .withPropertyValues("spring.grpc.client.channels.inventory.address=" + SCHEME + ":///inventory",
            "spring.grpc.client.channels.inventory.negotiation-type=plaintext")
        .withPropertyValues(properties)
        .run(context -> {
          assertThat(context).hasNotFailed();
          ServerBuilderCustomizer<?> protect = context.getBean(ServerBuilderCustomizer.class);
          Sessions atA = new Sessions();
          Sessions atB = new Sessions();
          Server a = start(protect, atA);
          Server b = start(protect, atB);
          ManagedChannel channel = null;
          try {
            ADDRESSES.clear();
            ADDRESSES.addAll(List.of(new InetSocketAddress("127.0.0.1", a.getPort()),
                new InetSocketAddress("127.0.0.1", b.getPort())));
            channel = context.getBean(GrpcChannelFactory.class).createChannel("inventory");
            for (int i = 0; i < 40; i++) {
              assertThat(call(channel, "x" + i)).isEqualTo("ok:x" + i);
            }
            check.check(context.getBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class), atA, atB);
            if (extra != null) {
              atA.budgets.clear();
              atB.budgets.clear();
              assertThat(extra.call(channel)).isEqualTo("ok:budgeted");
              after.check(atA, atB);
            }
          } finally {
            context.stop();
            if (channel != null) {
              channel.shutdownNow();
            }
            a.shutdownNow();
            b.shutdownNow();
          }
        });
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Server start(ServerBuilderCustomizer protect, Sessions recorder)
      throws java.io.IOException {
    ServerBuilder<?> builder = ServerBuilder.forPort(0);
    ServerCallHandler<String, String> answer = (call, headers) -> {
      call.request(1);
      return new ServerCall.Listener<>() {
        @Override
        public void onMessage(String request) {
          call.sendHeaders(new Metadata());
          call.sendMessage("ok:" + request);
          call.close(Status.OK, new Metadata());
        }
      };
    };
    builder.addService(ServerServiceDefinition.builder("test.Ping").addMethod(PING, answer).build());
    protect.customize(builder);
    builder.intercept(recorder); // added last, so it runs first and sees every call's headers
    return builder.build().start();
  }

  private static String call(ManagedChannel channel, String request) throws Exception {
    CompletableFuture<String> answer = new CompletableFuture<>();
    ClientCall<String, String> call = channel.newCall(PING,
        CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    call.start(new ClientCall.Listener<>() {
      private String message;

      @Override
      public void onMessage(String m) {
        message = m;
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (status.isOk()) {
          answer.complete(message);
        } else {
          answer.completeExceptionally(status.asRuntimeException());
        }
      }
    }, new Metadata());
    call.request(1);
    call.sendMessage(request);
    call.halfClose();
    return answer.get(10, TimeUnit.SECONDS);
  }

  /** The Spillway session ids, and the budgets, of the calls a server receives. */
  private static final class Sessions implements ServerInterceptor {
    private final List<String> seen = new CopyOnWriteArrayList<>();
    /** The budget header of each call to the test's method. */
    final List<String> budgets = new CopyOnWriteArrayList<>();

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
        Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      String id = headers.get(SpillwayMetadata.SESSION);
      if (id != null) {
        seen.add(id);
      }
      if (call.getMethodDescriptor().getFullMethodName().equals(PING.getFullMethodName())) {
        String budget = headers.get(SpillwayMetadata.BUDGET);
        budgets.add(budget == null ? "none" : budget);
      }
      return next.startCall(call, headers);
    }

    Set<String> ids() {
      return seen.stream().filter(Objects::nonNull).collect(Collectors.toSet());
    }
  }

  /** Resolves {@code spillway-spring-test:///NAME} to {@link #ADDRESSES}. */
  private static final class FixedAddresses extends NameResolverProvider {
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
      return SCHEME;
    }

    @Override
    public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
      return List.of(InetSocketAddress.class);
    }

    @Override
    public NameResolver newNameResolver(URI target, NameResolver.Args args) {
      if (!SCHEME.equals(target.getScheme())) {
        return null;
      }
      return new NameResolver() {
        @Override
        public String getServiceAuthority() {
          return target.getPath().substring(1);
        }

        @Override
        public void start(Listener2 listener) {
          List<EquivalentAddressGroup> groups = ADDRESSES.stream()
              .map(a -> new EquivalentAddressGroup(a)).toList();
          listener.onResult2(NameResolver.ResolutionResult.newBuilder()
              .setAddressesOrError(StatusOr.fromValue(groups)).build());
        }

        @Override
        public void shutdown() { }
      };
    }
  }
}
