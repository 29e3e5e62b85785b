package io.spillway.examples.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.ServerServiceDefinition;
import io.spillway.examples.spring.proto.InventoryGrpc;
import io.spillway.examples.spring.proto.ReserveReply;
import io.spillway.examples.spring.proto.ReserveRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.event.EventListener;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * The inventory application as it ships, with the Spillway starter's default properties (no
 * {@code spillway.*} property set; only the service's own cost is made small to keep the test
 * short): both endpoints answer, the gRPC server carries Spillway's control service, {@code
 * /actuator/metrics} lists the starter's meters, and a JFR recording contains its admission events.
 */
@SpringBootTest(classes = {InventoryApplication.class, InventoryApplicationTest.GrpcPort.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.grpc.server.port=0", "inventory.work=20us"})
class InventoryApplicationTest {

  /** Where Spring gRPC's server listens, and what it serves. */
  @TestConfiguration
  static class GrpcPort {
    static final AtomicReference<GrpcServerStartedEvent> STARTED = new AtomicReference<>();

    @Bean
    Object grpcStartedListener() {
      return new Object() {
        @EventListener
        public void started(GrpcServerStartedEvent event) {
          STARTED.set(event);
        }
      };
    }
  }

  @LocalServerPort
  int port;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @Test
  void bothEndpointsServeAndTheStarterMetersAreListed() throws Exception {
    HttpResponse<String> reserved = post("/reservations?sku=4000");
    assertEquals(200, reserved.statusCode(), reserved.body());
    assertTrue(reserved.body().contains("\"sku\":4000"), reserved.body());
    assertTrue(reserved.body().contains("\"remaining\":999"), reserved.body());

    GrpcServerStartedEvent grpc = GrpcPort.STARTED.get();
    assertTrue(grpc != null, "Spring gRPC's server started");
    assertTrue(grpc.getServer().getServices().stream().map(ServerServiceDefinition::getServiceDescriptor)
        .anyMatch(d -> d.getName().equals("spillway.Control")),
        "the starter installed Spillway on the gRPC server");
    ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", grpc.getPort()).usePlaintext().build();
    try {
      ReserveReply reply = InventoryGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
          .reserve(ReserveRequest.newBuilder().setSku(4000 + InventoryService.SKUS).build());
      assertEquals(998, reply.getRemaining(), "the same SKU, through the same service layer");
    } finally {
      channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }

    String names = get("/actuator/metrics").body();
    for (String meter : List.of("spillway.requests.admitted", "spillway.requests.completed",
        "spillway.requests.rejected", "spillway.queue.delay", "spillway.credits.pool")) {
      assertTrue(names.contains("\"" + meter + "\""), meter + " in " + names);
    }
    HttpResponse<String> admitted = get("/actuator/metrics/spillway.requests.admitted");
    assertEquals(200, admitted.statusCode());
    java.util.regex.Matcher count = java.util.regex.Pattern.compile("\"value\":([0-9.eE+]+)")
        .matcher(admitted.body());
    assertTrue(count.find() && Double.parseDouble(count.group(1)) >= 1, "admitted: " + admitted.body());
  }

  @Test
  void aJfrRecordingContainsAdmissionEvents(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("inventory.jfr");
    // The starter's default samples one admitted request in 1024 into an event. These reserve
    // SKUs 0, 1, 2, ... in turn, below the one the other test reserves.
    int requests = 1024 + 16;
    try (Recording recording = new Recording()) {
      recording.enable("io.spillway.Admission");
      recording.start();
      for (int i = 0; i < requests; i++) {
        assertEquals(200, post("/reservations").statusCode());
      }
      recording.stop();
      recording.dump(file);
    }
    List<RecordedEvent> admissions = RecordingFile.readAllEvents(file).stream()
        .filter(e -> e.getEventType().getName().equals("io.spillway.Admission")).toList();
    assertFalse(admissions.isEmpty(), "no io.spillway.Admission event in the recording");
    assertTrue(admissions.stream().allMatch(e -> e.getString("decision").equals("ok")
        && e.getString("endpoint").equals("default")), admissions.toString());
  }

  private HttpResponse<String> post(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
