package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Metadata;
import io.grpc.Status;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.harness.grpcdemo.GrpcFloodWorkload.End;
import io.spillway.harness.grpcdemo.GrpcFloodWorkload.WindowCounts;
import io.spillway.harness.grpcdemo.GrpcFloodWorkload.Windows;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pure parts of the gRPC session-flood harness: what a flood call carries, how a call's end
 * is told apart, the per-window counts and the row's arithmetic. The harness itself is a
 * measurement ({@code ./spillway grpc-flood}), not run here.
 */
class GrpcFloodMainTest {

  @Test
  void aFloodCallRegistersTheSessionItNames() {
    RequestMetadata read = new RequestMetadata();
    assertNull(SpillwayMetadata.readRequest(
        GrpcFloodWorkload.floodHeaders(GrpcFloodWorkload.FLOOD_SESSIONS_FROM + 7), read), "well formed");
    assertEquals(GrpcFloodWorkload.FLOOD_SESSIONS_FROM + 7, read.sessionId());
    assertEquals(RequestMetadata.FLAG_REGISTER, read.flags());
  }

  private static Metadata trailers(io.spillway.api.Status status) {
    Metadata trailers = new Metadata();
    SpillwayMetadata.writeResponse(new ResponseMetadata().status(status), trailers);
    return trailers;
  }

  @Test
  void endsAreToldApartByStatusAndTrailers() {
    assertEquals(End.SERVED, End.of(Status.OK, new Metadata()));
    assertEquals(End.REFUSED_FOR_CREDIT, End.of(Status.RESOURCE_EXHAUSTED,
        trailers(io.spillway.api.Status.REJECTED_NO_CREDIT)));
    assertEquals(End.REFUSED_OTHER, End.of(Status.RESOURCE_EXHAUSTED, trailers(io.spillway.api.Status.REJECTED_AQM)));
    assertEquals(End.ENDED_IN_CLIENT, End.of(
        Status.RESOURCE_EXHAUSTED.withDescription("spillway: expired in the client queue"), new Metadata()));
    assertEquals(End.ENDED_IN_CLIENT, End.of(
        Status.RESOURCE_EXHAUSTED.withDescription("spillway: rejected in the client (limit)"), new Metadata()));
    // exhausted elsewhere (gRPC's own limits): no Spillway trailers, not the client's session
    assertEquals(End.FAILED, End.of(Status.RESOURCE_EXHAUSTED.withDescription("message too large"), new Metadata()));
    assertEquals(End.FAILED, End.of(Status.DEADLINE_EXCEEDED, new Metadata()));
  }

  @Test
  void aCallCountsInTheWindowOpenWhenItWasIssuedAndInNoneBetween() {
    Windows windows = new Windows();
    WindowCounts counts = new WindowCounts(2, 3);
    counts.add(windows.current(), 0); // before any window: dropped
    windows.open(1);
    int issuedInOne = windows.current();
    windows.close();
    counts.add(issuedInOne, 2); // ends after the window closed: still its window's
    counts.add(issuedInOne, 2);
    counts.add(windows.current(), 1);

    assertArrayEquals(new long[] {0, 0, 0}, counts.row(0, 0, 3));
    assertArrayEquals(new long[] {0, 0, 2}, counts.row(1, 0, 3));
  }

  @Test
  void theMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
    assertEquals(5, GrpcFloodMain.median(new long[] {9, 1, 5}));
    assertEquals(450, GrpcFloodMain.median(new long[] {500, 100, 400, 900}));
    assertEquals(7, GrpcFloodMain.median(new long[] {7}));
  }

  @Test
  void changesAreSignedPercentages() {
    assertEquals("-10.3%", GrpcFloodMain.change(1748, 1949));
    assertEquals("+5.0%", GrpcFloodMain.change(105, 100));
    assertEquals("n/a", GrpcFloodMain.change(5, 0));
    assertEquals("0.83/0.93/1.00", GrpcFloodMain.perWindow(new double[] {0.834, 0.925, 0.999}));
  }

  @Test
  void stealIsTheEighthValueOfTheCpuLine() {
    String stat = "cpu  8410 12 3016 951280 215 0 407 1234 0 0\ncpu0 4205 6 1508 475640 107 0 203 617 0 0\n";
    assertEquals(1234, GrpcFloodMain.stealTicks(stat));
    assertEquals(-1, GrpcFloodMain.stealTicks("cpu  1 2 3\n"));
    assertEquals(-1, GrpcFloodMain.stealTicks(""));
  }

  @Test
  void arrivalsRunWhileTheirRuleHolds() {
    // due times a second in the past: each is issued at once, none parks
    long start = System.nanoTime() - 1_000_000_000L;
    List<Long> due = new ArrayList<>();
    PoissonArrivals.driveWhile(1_000, start, 1, next -> due.size() < 10, due::add);

    assertEquals(10, due.size());
    assertEquals(start, due.get(0));
    for (int i = 1; i < due.size(); i++) {
      assertTrue(due.get(i) >= due.get(i - 1), "due times in order: " + due);
    }
  }
}
