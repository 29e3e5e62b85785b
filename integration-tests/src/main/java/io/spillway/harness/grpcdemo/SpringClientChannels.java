package io.spillway.harness.grpcdemo;

import io.grpc.ManagedChannel;
import io.spillway.grpc.PerBackendSessions;
import io.spillway.spring.internal.SpillwayGrpcAutoConfiguration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.grpc.client.GrpcChannelFactory;

/**
 * The gRPC channels of a Spring Boot client application that adds the Spillway starter and
 * nothing else: a Spring context with auto-configuration (Spring gRPC's client auto-configuration
 * and the starter's), one named channel {@code inventory} to {@code 127.0.0.1:PORT} in clear
 * text, and the starter's defaults but for {@code spillway.client.slo}, the SLO the calls are
 * measured against. Each channel comes from Spring gRPC's {@link GrpcChannelFactory}, which runs
 * the starter's channel customizer: the channel gets {@link PerBackendSessions}, the way every
 * Spring gRPC channel of such an application does (spillway-spring-boot-starter/README.md).
 *
 * <p>Not thread-safe; the load generator makes its channels from one thread.
 */
final class SpringClientChannels implements AutoCloseable {

  /** The client application: auto-configuration only. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class ClientApplication { }

  private final ConfigurableApplicationContext context;
  private final List<ManagedChannel> channels = new ArrayList<>();

  SpringClientChannels(int port, long sloNanos) {
    context = new SpringApplicationBuilder(ClientApplication.class)
        .web(WebApplicationType.NONE)
        .bannerMode(Banner.Mode.OFF)
        .logStartupInfo(false)
        .properties(Map.of(
            "spring.grpc.client.channels.inventory.address", "127.0.0.1:" + port,
            "spring.grpc.client.channels.inventory.negotiation-type", "plaintext",
            "spillway.client.slo", (sloNanos / 1_000) + "us"))
        .run();
  }

  /** A new channel, as {@code GrpcChannelFactory.createChannel("inventory")} builds it. */
  ManagedChannel channel() {
    ManagedChannel ch = context.getBean(GrpcChannelFactory.class).createChannel("inventory");
    channels.add(ch);
    return ch;
  }

  /**
   * The starter's sessions of each channel made, read where the starter's Actuator endpoint reads
   * them (its {@code grpc.channels} view).
   */
  List<PerBackendSessions> sessions() {
    return context.getBean(SpillwayGrpcAutoConfiguration.GrpcWiring.class).channelSessions();
  }

  @Override
  public void close() {
    for (ManagedChannel ch : channels) {
      ch.shutdownNow();
    }
    context.close();
  }
}
