package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.spring.app.ManualTicker;
import io.spillway.spring.internal.SpillwayAutoConfiguration;
import io.spillway.spring.internal.SpillwayGrpcAutoConfiguration;
import io.spillway.spring.internal.SpillwayObservabilityAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/** Spring gRPC wiring, and the HTTP clients' pushback. */
class GrpcAndClientsTest {

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void springGrpcServersAreProtectedByOverloadGrpcInstall() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class))
        .run(context -> {
          ServerBuilderCustomizer customizer = context.getBean(ServerBuilderCustomizer.class);
          InProcessServerBuilder builder = InProcessServerBuilder.forName("spillway-spring-test");
          customizer.customize(builder);
          Server server = builder.build().start();
          try {
            assertThat(server.getServices()).extracting(ServerServiceDefinition::getServiceDescriptor)
                .extracting(d -> d.getName()).contains("spillway.Control");
            assertThat(context.getBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class).servers())
                .hasSize(1);
          } finally {
            server.shutdownNow();
          }
        });
  }

  /**
   * {@code spillway.scheme} names the scheme of every gate the starter builds: a gRPC server runs
   * the one its HTTP endpoints run ({@code none} measures and never refuses).
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void grpcServersAndChannelsRunTheSchemeThePropertyNames() {
    for (String scheme : new String[] {"none", "breakwater"}) {
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
              SpillwayGrpcAutoConfiguration.class))
          .withPropertyValues("spillway.scheme=" + scheme)
          .run(context -> {
            ServerBuilderCustomizer customizer = context.getBean(ServerBuilderCustomizer.class);
            InProcessServerBuilder builder = InProcessServerBuilder.forName(
                InProcessServerBuilder.generateName());
            customizer.customize(builder);
            Class<?> httpGate = context.getBean(SpillwayHttpGate.class).endpoints().get(0).gate()
                .getClass();
            assertThat(context.getBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class).servers()
                .get(0).gate().getClass()).as(scheme).isEqualTo(httpGate);
          });
    }
  }

  /**
   * Spring gRPC announces a server's graceful shutdown just before it calls {@code shutdown()}:
   * the starter ends the clients' credit streams then, so the shutdown does not wait out its
   * grace period for them (each is a call that would otherwise end only with its session).
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aGrpcServersShutdownEndsTheCreditStreamsItWouldWaitFor() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class))
        .run(context -> {
          ServerBuilderCustomizer customizer = context.getBean(ServerBuilderCustomizer.class);
          String name = InProcessServerBuilder.generateName();
          InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
          builder.addService(pingService());
          customizer.customize(builder);
          Server server = builder.build().start();
          io.grpc.ManagedChannel channel = io.grpc.inprocess.InProcessChannelBuilder.forName(name)
              .build();
          io.spillway.grpc.SpillwayClientInterceptor session = io.spillway.grpc.SpillwayGrpc
              .client().sloMillis(50).build();
          try {
            io.grpc.Channel withSession = io.grpc.ClientInterceptors.intercept(channel, session);
            assertThat(call(withSession, (io.grpc.MethodDescriptor<String, String>) pingService()
                .getMethod("test.Ping/Ping").getMethodDescriptor(), "x")).isEqualTo("ok:x");
            SpillwayGrpcAutoConfiguration.GrpcWiring wiring =
                context.getBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class);
            assertThat(wiring.servers().get(0).control().subscribers()).isEqualTo(1);
            // what Spring gRPC's lifecycle does as it stops the server
            org.springframework.grpc.server.GrpcServerFactory factory =
                new org.springframework.grpc.server.GrpcServerFactory() {
                  @Override
                  public Server createServer() {
                    return server;
                  }

                  @Override
                  public void addService(ServerServiceDefinition service) { }
                };
            context.publishEvent(new org.springframework.grpc.server.lifecycle
                .GrpcServerShutdownEvent(new org.springframework.grpc.server.lifecycle
                .GrpcServerLifecycle(factory, java.time.Duration.ZERO, context), server));
            server.shutdown();
            assertThat(server.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS))
                .as("terminated: no credit stream held it").isTrue();
            assertThat(wiring.servers().get(0).control().subscribers()).isZero();
          } finally {
            session.close();
            channel.shutdownNow();
            server.shutdownNow();
          }
        });
  }

  /**
   * A channel built by Spring gRPC gets its session through the starter's customizer, which sees
   * only the channel's builder. As the context stops (before any bean is destroyed, Spring gRPC's
   * channel factory among them, which shuts its channels down and waits for their calls), the
   * sessions close, so their credit streams no longer hold the channels open.
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void channelsSessionsCloseAsTheContextStopsSoTheChannelsTerminate() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class))
        .run(context -> {
          ServedChannel served = servedChannel(context);
          Server server = served.server();
          io.grpc.ManagedChannel channel = served.channel();
          try {
            assertThat(call(channel, (io.grpc.MethodDescriptor<String, String>) pingService()
                .getMethod("test.Ping/Ping").getMethodDescriptor(), "x")).isEqualTo("ok:x");
            SpillwayGrpcAutoConfiguration.GrpcWiring wiring =
                context.getBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class);
            assertThat(wiring.servers().get(0).control().subscribers()).as("the session's stream").isEqualTo(1);
            assertThat(wiring.channelSessions()).hasSize(1);
            assertThat(wiring.channelSessions().get(0).sessions())
                .as("a channel to one in-process server: one session").hasSize(1);
            context.stop(); // what closing the context does before it destroys any bean
            channel.shutdown(); // what the channel factory's destruction does next
            assertThat(channel.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS))
                .as("terminated: no credit stream held it").isTrue();
          } finally {
            channel.shutdownNow();
            server.shutdownNow();
          }
        });
  }

  /**
   * With {@code spillway.client.grpc-session-per-backend=false} a channel keeps one session under
   * its own load-balancing policy: its first call already waits in it and opens its stream.
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void oneSessionPerChannelWhenPerBackendSessionsAreOff() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class))
        .withPropertyValues("spillway.client.grpc-session-per-backend=false")
        .run(context -> {
          ServedChannel served = servedChannel(context);
          Server server = served.server();
          io.grpc.ManagedChannel channel = served.channel();
          try {
            assertThat(call(channel, (io.grpc.MethodDescriptor<String, String>) pingService()
                .getMethod("test.Ping/Ping").getMethodDescriptor(), "x")).isEqualTo("ok:x");
            SpillwayGrpcAutoConfiguration.GrpcWiring wiring =
                context.getBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class);
            assertThat(wiring.servers().get(0).control().subscribers()).as("the session's stream").isEqualTo(1);
            assertThat(wiring.channelSessions()).isEmpty();
          } finally {
            context.stop();
            channel.shutdownNow();
            server.shutdownNow();
          }
        });
  }

  /**
   * {@code spillway.client.enabled=false} leaves the application's own clients as they are, Spring
   * gRPC's channels among them: no channel customizer of Spillway's, while its servers are still
   * protected.
   */
  @Test
  void clientsOffLeavesSpringGrpcChannelsAsTheyAre() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class))
        .withPropertyValues("spillway.client.enabled=false")
        .run(context -> {
          assertThat(context).doesNotHaveBean(org.springframework.grpc.client.GrpcChannelBuilderCustomizer.class);
          assertThat(context).hasSingleBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class);
        });
  }

  /**
   * The application's clock and timer (one bean that is both {@code Ticker} and {@code
   * Scheduler}) are what the gRPC servers' gates and the Spring gRPC channels' sessions run on, as
   * the HTTP endpoints and the HTTP clients' sessions do: the server gate's control loop is
   * scheduled on the application's timer, and a channel's call reads the application's clock,
   * whether the channel keeps a session per backend or one for the channel.
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void grpcServersAndChannelsRunOnTheApplicationsClockAndTimer() {
    for (String perBackend : new String[] {"true", "false"}) {
      RecordingClock clock = new RecordingClock();
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
              SpillwayGrpcAutoConfiguration.class))
          .withBean(RecordingClock.class, () -> clock)
          .withPropertyValues("spillway.client.grpc-session-per-backend=" + perBackend)
          .run(context -> {
            int scheduled = clock.scheduled.get();
            context.getBean(ServerBuilderCustomizer.class)
                .customize(InProcessServerBuilder.forName(InProcessServerBuilder.generateName()));
            assertThat(clock.scheduled.get()).as("the gRPC server gate's control loop")
                .isGreaterThan(scheduled);

            // a server without Spillway: only the channel's side reads the clock
            String name = InProcessServerBuilder.generateName();
            Server server = InProcessServerBuilder.forName(name).addService(pingService()).build()
                .start();
            io.grpc.inprocess.InProcessChannelBuilder builder =
                io.grpc.inprocess.InProcessChannelBuilder.forName(name);
            context.getBean(org.springframework.grpc.client.GrpcChannelBuilderCustomizer.class)
                .customize(name, builder);
            io.grpc.ManagedChannel channel = builder.build();
            try {
              long reads = clock.reads.get();
              assertThat(call(channel, (io.grpc.MethodDescriptor<String, String>) pingService()
                  .getMethod("test.Ping/Ping").getMethodDescriptor(), "x")).isEqualTo("ok:x");
              assertThat(clock.reads.get()).as("reads of the application's clock by a call on a "
                  + "channel with grpc-session-per-backend=" + perBackend).isGreaterThan(reads);
            } finally {
              context.stop();
              channel.shutdownNow();
              server.shutdownNow();
            }
          });
    }
  }

  /** A clock that stands still and counts its reads, and a timer that counts and never runs. */
  static final class RecordingClock implements io.spillway.api.Ticker, io.spillway.api.Scheduler {
    final java.util.concurrent.atomic.AtomicLong reads =
        new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicInteger scheduled =
        new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public long read() {
      reads.incrementAndGet();
      return 1_000_000_000L;
    }

    @Override
    public io.spillway.api.Cancellable schedule(Runnable task, long delayNanos) {
      scheduled.incrementAndGet();
      return () -> { };
    }
  }

  /** An in-process server and a channel to it, each built through the starter's customizer. */
  private record ServedChannel(Server server, io.grpc.ManagedChannel channel) { }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static ServedChannel servedChannel(
      org.springframework.context.ApplicationContext context) throws java.io.IOException {
    ServerBuilderCustomizer serverCustomizer = context.getBean(ServerBuilderCustomizer.class);
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(pingService());
    serverCustomizer.customize(builder);
    Server server = builder.build().start();
    io.grpc.inprocess.InProcessChannelBuilder channelBuilder =
        io.grpc.inprocess.InProcessChannelBuilder.forName(name);
    context.getBean(org.springframework.grpc.client.GrpcChannelBuilderCustomizer.class)
        .customize(name, channelBuilder);
    return new ServedChannel(server, channelBuilder.build());
  }

  /** A unary method whose messages are UTF-8 strings: answers "ok:" + the request. */
  private static ServerServiceDefinition pingService() {
    return pingService(null);
  }

  /** As above; a request "slow" takes 5 s of {@code ticker}'s time to answer. */
  private static ServerServiceDefinition pingService(ManualTicker ticker) {
    io.grpc.MethodDescriptor<String, String> ping = StringMethods.unary("test.Ping/Ping");
    io.grpc.ServerCallHandler<String, String> handler = (call, headers) -> {
      call.request(1);
      return new io.grpc.ServerCall.Listener<>() {
        private String request;

        @Override
        public void onMessage(String message) {
          request = message;
        }

        @Override
        public void onHalfClose() {
          if ("slow".equals(request) && ticker != null) {
            ticker.advanceMillis(5_000);
          }
          if ("abort".equals(request)) { // as a BudgetedLock in the handler refuses
            throw new io.spillway.api.BudgetExceededException(7_000_000, 1_000_000);
          }
          call.sendHeaders(new io.grpc.Metadata());
          call.sendMessage("ok:" + request);
          call.close(io.grpc.Status.OK, new io.grpc.Metadata());
        }
      };
    };
    return ServerServiceDefinition.builder("test.Ping").addMethod(ping, handler).build();
  }

  /** One unary call on {@code channel}; its answer, or the status it failed with. */
  private static String call(io.grpc.Channel channel, io.grpc.MethodDescriptor<String, String> method,
      String request) throws Exception {
    return start(channel, method, request).get(10, java.util.concurrent.TimeUnit.SECONDS);
  }

  /** Starts one unary call; its answer, or the status it failed with, when it ends. */
  private static java.util.concurrent.CompletableFuture<String> start(io.grpc.Channel channel,
      io.grpc.MethodDescriptor<String, String> method, String request) {
    java.util.concurrent.CompletableFuture<String> answer = new java.util.concurrent.CompletableFuture<>();
    io.grpc.ClientCall<String, String> call = channel.newCall(method, io.grpc.CallOptions.DEFAULT);
    call.start(new io.grpc.ClientCall.Listener<>() {
      private String message;

      @Override
      public void onMessage(String m) {
        message = m;
      }

      @Override
      public void onClose(io.grpc.Status status, io.grpc.Metadata trailers) {
        answer.complete(status.isOk() ? message : status.toString());
      }
    }, new io.grpc.Metadata());
    call.request(1);
    call.sendMessage(request);
    call.halfClose();
    return answer;
  }

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void springGrpcServersAreMeteredAndShownInTheActuatorEndpoint() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class, SpillwayObservabilityAutoConfiguration.class))
        .withPropertyValues("management.endpoints.web.exposure.include=spillway")
        .run(context -> {
          SpillwayEndpoint endpoint = context.getBean(SpillwayEndpoint.class);
          assertThat(endpoint.state()).doesNotContainKey("grpc"); // no gRPC server built yet
          ServerBuilderCustomizer customizer = context.getBean(ServerBuilderCustomizer.class);
          String name = InProcessServerBuilder.generateName();
          InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
          builder.addService(pingService());
          customizer.customize(builder);
          Server server = builder.build().start();
          io.grpc.ManagedChannel channel = io.grpc.inprocess.InProcessChannelBuilder.forName(name)
              .build();
          try {
            io.grpc.MethodDescriptor<String, String> ping = (io.grpc.MethodDescriptor<String, String>)
                pingService().getMethod("test.Ping/Ping").getMethodDescriptor();
            assertThat(call(channel, ping, "a")).isEqualTo("ok:a");

            io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
            context.getBean(SpillwayMeterBinder.class).bindTo(registry);
            assertThat(registry.get("spillway.requests.admitted").tag("endpoint", "grpc")
                .functionCounter().count()).isEqualTo(1.0);
            assertThat(registry.get("spillway.requests.completed").tag("endpoint", "grpc")
                .tag("outcome", "success").functionCounter().count()).isEqualTo(1.0);
            assertThat(registry.get("spillway.requests.admitted").tag("endpoint", "default")
                .functionCounter().count()).isEqualTo(0.0);

            java.util.Map<String, Object> grpc =
                (java.util.Map<String, Object>) endpoint.state().get("grpc");
            assertThat(grpc).containsEntry("name", "grpc").containsEntry("servers", 1)
                .containsEntry("admitted", 1L).containsKey("queueDelayNanos");
            assertThat((String) grpc.get("workers")).contains("virtual threads");
          } finally {
            channel.shutdownNow();
            server.shutdownNow();
          }
        });
  }

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aRecordingOfASpringGrpcServerContainsItsAdmissionsAndRefusals(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws Exception {
    ManualTicker ticker = new ManualTicker();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpillwayAutoConfiguration.class,
            SpillwayGrpcAutoConfiguration.class))
        .withBean(io.spillway.api.Ticker.class, () -> ticker)
        .withPropertyValues("spillway.jfr.admitted-sample-every=1")
        .run(context -> {
          ServerBuilderCustomizer customizer = context.getBean(ServerBuilderCustomizer.class);
          String name = InProcessServerBuilder.generateName();
          InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
          builder.addService(pingService(ticker));
          customizer.customize(builder);
          Server server = builder.build().start();
          io.grpc.ManagedChannel channel = io.grpc.inprocess.InProcessChannelBuilder.forName(name)
              .build();
          java.nio.file.Path file = dir.resolve("grpc.jfr");
          try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
            recording.enable("io.spillway.Admission");
            recording.enable("io.spillway.BudgetAbort");
            recording.start();
            io.grpc.MethodDescriptor<String, String> ping = (io.grpc.MethodDescriptor<String, String>)
                pingService().getMethod("test.Ping/Ping").getMethodDescriptor();
            assertThat(call(channel, ping, "abort")).contains("RESOURCE_EXHAUSTED");
            assertThat(call(channel, ping, "slow")).isEqualTo("ok:slow"); // p99 service: 5 s
            io.grpc.Channel twoSeconds = io.grpc.ClientInterceptors.intercept(channel,
                new io.grpc.ClientInterceptor() {
                  @Override
                  public <Q, R> io.grpc.ClientCall<Q, R> interceptCall(
                      io.grpc.MethodDescriptor<Q, R> method, io.grpc.CallOptions options,
                      io.grpc.Channel next) {
                    return next.newCall(method,
                        options.withDeadlineAfter(2, java.util.concurrent.TimeUnit.SECONDS));
                  }
                });
            assertThat(call(twoSeconds, ping, "b")).contains("RESOURCE_EXHAUSTED")
                .contains("budget"); // its deadline cannot be met: refused before it queues
            recording.stop();
            recording.dump(file);
          } finally {
            channel.shutdownNow();
            server.shutdownNow();
          }
          java.util.List<jdk.jfr.consumer.RecordedEvent> events =
              jdk.jfr.consumer.RecordingFile.readAllEvents(file);
          java.util.List<String> decisions = events.stream()
              .filter(e -> e.getEventType().getName().equals("io.spillway.Admission"))
              .filter(e -> e.getString("endpoint").equals("grpc"))
              .map(e -> e.getString("decision")).toList();
          // the aborted call and the slow one were admitted; threads buffer apart, so any order
          assertThat(decisions).containsExactlyInAnyOrder("ok", "ok", "budget");
          java.util.List<jdk.jfr.consumer.RecordedEvent> aborts = events.stream()
              .filter(e -> e.getEventType().getName().equals("io.spillway.BudgetAbort")).toList();
          assertThat(aborts).hasSize(1);
          assertThat(aborts.get(0).getString("endpoint")).isEqualTo("grpc");
          assertThat(aborts.get(0).getDuration("queueingDelay").toNanos()).isEqualTo(7_000_000);
        });
  }

  @Test
  void a503HoldsTheServerOffForItsPushback() {
    ManualTicker ticker = new ManualTicker();
    RetryPushback pushback = new RetryPushback(ticker);
    String server = "http://a:80";
    pushback.checkBeforeSending(server); // nothing recorded: passes
    org.junit.jupiter.api.Assertions.assertEquals(0, pushback.onResponse(server, 200, null, "5"));
    org.junit.jupiter.api.Assertions.assertEquals(250, pushback.onResponse(server, 503, "250", "1"));
    assertThatThrownBy(() -> pushback.checkBeforeSending(server))
        .isInstanceOfSatisfying(SpillwayRejectedException.class,
            e -> assertThat(e.retryAfterMillis()).isEqualTo(250));
    pushback.checkBeforeSending("http://b:80"); // another server is not held off
    ticker.advanceMillis(250);
    pushback.checkBeforeSending(server);
    // A server that is not Spillway: Retry-After in seconds; an HTTP date is not honoured.
    org.junit.jupiter.api.Assertions.assertEquals(2000, pushback.onResponse(server, 503, null, "2"));
    org.junit.jupiter.api.Assertions.assertEquals(0,
        pushback.onResponse("http://c:80", 503, "x", "Fri, 31 Dec 1999 23:59:59 GMT"));
  }
}
