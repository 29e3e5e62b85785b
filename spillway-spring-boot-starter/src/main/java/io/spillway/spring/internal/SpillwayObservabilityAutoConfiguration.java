package io.spillway.spring.internal;

import io.spillway.spring.ServerQueueDelay;
import io.spillway.spring.SpillwayEndpoint;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpSessions;
import io.spillway.spring.SpillwayMeterBinder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The Actuator endpoint and the Micrometer meters, each when its library is present: of the HTTP
 * endpoints, and of the gRPC servers Spring gRPC builds where it is on the class path.
 */
@AutoConfiguration(after = {SpillwayAutoConfiguration.class, SpillwayGrpcAutoConfiguration.class})
@ConditionalOnBean(SpillwayHttpGate.class)
public class SpillwayObservabilityAutoConfiguration {

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.binder.MeterBinder")
  static class Meters {
    @Bean
    SpillwayMeterBinder spillwayMeterBinder(SpillwayHttpGate gate,
        ObjectProvider<SpillwayGrpcAutoConfiguration.GrpcWiring> grpc) {
      SpillwayGrpcAutoConfiguration.GrpcWiring wiring = grpc.getIfAvailable();
      return new SpillwayMeterBinder(gate,
          wiring == null ? java.util.List.of() : java.util.List.of(wiring.stats()));
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
  static class Actuator {
    @Bean
    @ConditionalOnAvailableEndpoint(SpillwayEndpoint.class)
    SpillwayEndpoint spillwayEndpoint(SpillwayHttpGate gate, ServerQueueDelay delay,
        ObjectProvider<ServerWorkers> workers, ObjectProvider<ServletStages> servlet,
        UnknownProperties unknown, ObjectProvider<SpillwayGrpcAutoConfiguration.GrpcWiring> grpc,
        ObjectProvider<HttpCreditStreams> streams, ObjectProvider<SpillwayHttpSessions> sessions) {
      HttpCreditStreams open = streams.getIfAvailable();
      SpillwayHttpSessions clients = sessions.getIfAvailable();
      ServletStages stages = servlet.getIfAvailable();
      SpillwayGrpcAutoConfiguration.GrpcWiring wiring = grpc.getIfAvailable();
      // Tomcat and Jetty may both be on the class path; the one whose factory was customized runs.
      return new SpillwayEndpoint(gate, delay, () -> workers.orderedStream()
          .filter(ServerWorkers::customized).map(ServerWorkers::route).findFirst()
          .orElse("event loops or an unmeasured server"),
          stages != null ? stages::state : java.util.Map::of, unknown.names(),
          wiring != null ? wiring::state : java.util.Map::of, () -> httpCredits(open, clients));
    }

    private static java.util.Map<String, Object> httpCredits(HttpCreditStreams open,
        SpillwayHttpSessions clients) {
      java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
      if (open != null) {
        m.put("streamsOpen", open.open());
      }
      if (clients != null) {
        java.util.Map<String, Object> byServer = new java.util.TreeMap<>();
        clients.sessions().forEach((origin, s) -> byServer.put(origin, java.util.Map.of(
            "passThrough", s.isPassThrough(), "queued", s.queued())));
        m.put("clientSessions", byServer);
      }
      return m;
    }
  }
}
