package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.spring.app.ManualTicker;
import io.spillway.spring.internal.SpillwayAutoConfiguration;
import io.spillway.spring.internal.SpillwayGrpcAutoConfiguration;
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
