package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.spillway.api.BudgetExceededException;
import io.spillway.spring.app.ManualTicker;
import io.spillway.spring.internal.SpillwayAutoConfiguration;
import io.spillway.spring.internal.SpillwayGrpcAutoConfiguration;
import io.spillway.spring.internal.SpillwayObservabilityAutoConfiguration;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/**
 * The gRPC servers' meters by method: a Spring gRPC server's calls are counted under their full
 * method name, a refusal under its method and reason, a call to a method the server does not have
 * under none; and the servers' queueing delay is a gauge of its own. The registry is bound before
 * the server exists, as an application's is, so a method's meters come with its first call.
 */
class GrpcMethodMetersTest {

  private static final String PING = "test.Ping/Ping";
  private static final String HOLD = "test.Ping/Hold";

  private final ManualTicker ticker = new ManualTicker();
  private final CountDownLatch held = new CountDownLatch(1);
  private final CountDownLatch cancelled = new CountDownLatch(1);

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class, SpillwayObservabilityAutoConfiguration.class))
        .withBean(io.spillway.api.Ticker.class, () -> ticker)
        .withPropertyValues("management.endpoints.web.exposure.include=spillway",
            "spillway.endpoints[0].path=/orders/**", "spillway.endpoints[0].name=orders");
  }

  @Test
  void callsAreCountedUnderTheirMethodAndRefusalsUnderTheirMethodAndReason() {
    runner().run(context -> {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      context.getBean(SpillwayMeterBinder.class).bindTo(registry);
      Served served = serve(context);
      try {
        assertThat(call(served.channel(), method(PING), "abort")).contains("RESOURCE_EXHAUSTED");
        assertThat(call(served.channel(), method(PING), "slow")).isEqualTo("ok:slow"); // p99: 5 s
        assertThat(call(withDeadlineSeconds(served.channel(), 2), method(PING), "b"))
            .contains("RESOURCE_EXHAUSTED").contains("budget"); // its deadline cannot be met
        assertThat(call(served.channel(), method(PING), "a")).isEqualTo("ok:a");
        assertThat(call(served.channel(), method("test.Ping/Nope"), "c")).contains("UNIMPLEMENTED");

        assertThat(counter(registry, "spillway.requests.admitted", PING)).isEqualTo(3);
        assertThat(counter(registry, "spillway.requests.rejected", PING, "reason", "budget"))
            .isEqualTo(1);
        assertThat(counter(registry, "spillway.requests.rejected", PING, "reason", "aqm"))
            .isZero();
        assertThat(counter(registry, "spillway.requests.completed", PING, "outcome", "success"))
            .isEqualTo(2);
        assertThat(counter(registry, "spillway.requests.completed", PING, "outcome", "dropped"))
            .as("a refusal ends as dropped").isEqualTo(1);
        assertThat(counter(registry, "spillway.budget.aborts", PING)).isEqualTo(1);
        assertThat(methodTags(registry)).as("only a method that was called has meters; a method"
            + " the server does not have, none").containsExactly(PING);

        // the sums over methods are the gate's totals, which the Actuator endpoint shows
        @SuppressWarnings("unchecked")
        Map<String, Object> grpc = (Map<String, Object>) context.getBean(SpillwayEndpoint.class)
            .state().get("grpc");
        assertThat(grpc).containsEntry("admitted", 3L)
            .containsEntry("rejected", Map.of("budget", 1L)).containsEntry("budgetAborts", 1L);
      } finally {
        served.close();
      }
    });
  }

  @Test
  void aCallItsClientCancelsEndsAsFailedUnderItsMethod() {
    runner().run(context -> {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      context.getBean(SpillwayMeterBinder.class).bindTo(registry);
      Served served = serve(context);
      try {
        ClientCall<String, String> call = served.channel().newCall(method(HOLD), CallOptions.DEFAULT);
        call.start(new ClientCall.Listener<>() { }, new Metadata());
        call.request(1);
        call.sendMessage("x");
        call.halfClose();
        assertThat(held.await(10, TimeUnit.SECONDS)).as("the handler has the call").isTrue();
        call.cancel("the client gives up", null);
        // the handler hears of it after the interceptor that counts it
        assertThat(cancelled.await(10, TimeUnit.SECONDS)).as("the handler heard the cancel").isTrue();

        assertThat(counter(registry, "spillway.requests.admitted", HOLD)).isEqualTo(1);
        assertThat(counter(registry, "spillway.requests.completed", HOLD, "outcome", "failed"))
            .isEqualTo(1);
        assertThat(counter(registry, "spillway.requests.completed", HOLD, "outcome", "success"))
            .isZero();
      } finally {
        served.close();
      }
    });
  }

  @Test
  void theGrpcServersQueueingDelayIsAGaugeTaggedWithTheirEndpoint() {
    runner().run(context -> {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      context.getBean(SpillwayMeterBinder.class).bindTo(registry);
      assertThat(registry.get("spillway.queue.delay").tag("endpoint", "grpc").gauge().value())
          .as("no gRPC server yet").isZero();
      Served served = serve(context);
      try {
        @SuppressWarnings("unchecked")
        Map<String, Object> grpc = (Map<String, Object>) context.getBean(SpillwayEndpoint.class)
            .state().get("grpc");
        // the clock stands still between the two readings: the same delay, read from one source
        assertThat(registry.get("spillway.queue.delay").tag("endpoint", "grpc").gauge().value())
            .isEqualTo((Long) grpc.get("queueDelayNanos") / 1e9);
        assertThat(registry.get("spillway.queue.delay").tag("endpoint", "default").gauge())
            .as("the HTTP server's, per HTTP endpoint").isNotNull();
        assertThat(registry.get("spillway.queue.delay").tag("endpoint", "orders").gauge())
            .isNotNull();
      } finally {
        served.close();
      }
    });
  }

  /**
   * Prometheus refuses a meter whose name another meter holds with other tag keys (Micrometer's
   * Prometheus registry drops it with a warning), so every meter of one name, HTTP or gRPC, carries
   * the same keys.
   */
  @Test
  void everyMeterOfOneNameCarriesTheSameTagKeys() {
    runner().run(context -> {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      context.getBean(SpillwayMeterBinder.class).bindTo(registry);
      Served served = serve(context);
      try {
        assertThat(call(served.channel(), method(PING), "a")).isEqualTo("ok:a");
        Map<String, Set<Set<String>>> keysByName = registry.getMeters().stream()
            .collect(Collectors.groupingBy(m -> m.getId().getName(), Collectors.mapping(
                m -> m.getId().getTags().stream().map(Tag::getKey)
                    .collect(Collectors.toCollection(TreeSet::new)), Collectors.toSet())));
        assertThat(keysByName).containsKeys("spillway.requests.admitted", "spillway.queue.delay");
        keysByName.forEach((name, keySets) -> assertThat(keySets).as(name).hasSize(1));
        assertThat(registry.get("spillway.requests.admitted").tags("endpoint", "orders",
            "method", SpillwayMeterBinder.NO_METHOD).functionCounter()).isNotNull();
      } finally {
        served.close();
      }
    });
  }

  private static double counter(SimpleMeterRegistry registry, String name, String method,
      String... tags) {
    return registry.get(name).tags("endpoint", "grpc", "method", method).tags(tags)
        .functionCounter().count();
  }

  private static Set<String> methodTags(SimpleMeterRegistry registry) {
    return registry.getMeters().stream().map(Meter::getId)
        .filter(id -> "grpc".equals(id.getTag("endpoint")) && id.getTag("method") != null)
        .map(id -> id.getTag("method")).collect(Collectors.toCollection(TreeSet::new));
  }

  /** An in-process server built through the starter's customizer, and a plain channel to it. */
  private record Served(Server server, ManagedChannel channel) {
    void close() {
      channel.shutdownNow();
      server.shutdownNow();
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private Served serve(ApplicationContext context) throws IOException {
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(pingService());
    ((ServerBuilderCustomizer) context.getBean(ServerBuilderCustomizer.class)).customize(builder);
    return new Served(builder.build().start(), InProcessChannelBuilder.forName(name).build());
  }

  private static MethodDescriptor<String, String> method(String fullName) {
    return StringMethods.unary(fullName);
  }

  /**
   * {@code test.Ping/Ping} answers "ok:" + the request; "slow" takes 5 s of the test's clock,
   * "abort" fails as a {@code BudgetedLock} in the handler would. {@code test.Ping/Hold} never
   * answers, and tells the test when it has the call and when its client cancelled it.
   */
  private ServerServiceDefinition pingService() {
    ServerCallHandler<String, String> ping = (call, headers) -> {
      call.request(1);
      return new ServerCall.Listener<>() {
        private String request;

        @Override
        public void onMessage(String message) {
          request = message;
        }

        @Override
        public void onHalfClose() {
          if ("slow".equals(request)) {
            ticker.advanceMillis(5_000);
          }
          if ("abort".equals(request)) {
            throw new BudgetExceededException(7_000_000, 1_000_000);
          }
          call.sendHeaders(new Metadata());
          call.sendMessage("ok:" + request);
          call.close(io.grpc.Status.OK, new Metadata());
        }
      };
    };
    ServerCallHandler<String, String> hold = (call, headers) -> {
      call.request(1);
      return new ServerCall.Listener<>() {
        @Override
        public void onHalfClose() {
          held.countDown();
        }

        @Override
        public void onCancel() {
          cancelled.countDown();
        }
      };
    };
    return ServerServiceDefinition.builder("test.Ping").addMethod(method(PING), ping)
        .addMethod(method(HOLD), hold).build();
  }

  private static Channel withDeadlineSeconds(Channel channel, long seconds) {
    return ClientInterceptors.intercept(channel, new io.grpc.ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method,
          CallOptions options, Channel next) {
        return next.newCall(method, options.withDeadlineAfter(seconds, TimeUnit.SECONDS));
      }
    });
  }

  /** One unary call; its answer, or the status it failed with. */
  private static String call(Channel channel, MethodDescriptor<String, String> method,
      String request) throws Exception {
    CompletableFuture<String> answer = new CompletableFuture<>();
    ClientCall<String, String> call = channel.newCall(method, CallOptions.DEFAULT);
    call.start(new ClientCall.Listener<>() {
      private String message;

      @Override
      public void onMessage(String m) {
        message = m;
      }

      @Override
      public void onClose(io.grpc.Status status, Metadata trailers) {
        answer.complete(status.isOk() ? message : status.toString());
      }
    }, new Metadata());
    call.request(1);
    call.sendMessage(request);
    call.halfClose();
    return answer.get(10, TimeUnit.SECONDS);
  }
}
