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

  /** A unary method whose messages are UTF-8 strings: answers "ok:" + the request. */
  private static ServerServiceDefinition pingService() {
    io.grpc.MethodDescriptor.Marshaller<String> utf8 = new io.grpc.MethodDescriptor.Marshaller<>() {
      @Override
      public java.io.InputStream stream(String value) {
        return new java.io.ByteArrayInputStream(value.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }

      @Override
      public String parse(java.io.InputStream stream) {
        try {
          return new String(stream.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
    };
    io.grpc.MethodDescriptor<String, String> ping = io.grpc.MethodDescriptor.<String, String>newBuilder()
        .setType(io.grpc.MethodDescriptor.MethodType.UNARY).setFullMethodName("test.Ping/Ping")
        .setRequestMarshaller(utf8).setResponseMarshaller(utf8).build();
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
    return answer.get(10, java.util.concurrent.TimeUnit.SECONDS); // bounds a hang only
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
          } finally {
            channel.shutdownNow();
            server.shutdownNow();
          }
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
