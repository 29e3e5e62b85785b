package io.spillway.jmh;

import io.grpc.Metadata;
import io.spillway.api.InterfacePrices;
import io.spillway.api.ResponseMetadata;
import io.spillway.grpc.InterfaceRegistry;
import io.spillway.grpc.SpillwayMetadata;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What Rajomon's list of interface prices ({@code spillway-prices}) adds to a response over gRPC:
 * the server writes a response's fields into trailers, the client reads them back, with the
 * answered interface's price alone (the baseline, what a one-interface server sends) and with the
 * prices of the hotel graph's two interfaces, named by method because each side numbers methods
 * its own way. The trailers' trip through the transport is not measured here; the per-hop
 * interceptor cost over loopback is {@link GrpcInterceptorBenchmark}'s.
 *
 * <p>Run: {@code ./spillway jmh PriceListBenchmark -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1)
public class PriceListBenchmark {

  private static final String SEARCH = "spillway.hotel.Graph/Search";
  private static final String RESERVE = "spillway.hotel.Graph/Reserve";

  private final InterfaceRegistry server = InterfaceRegistry.of(SEARCH, RESERVE);
  private final InterfaceRegistry client = InterfaceRegistry.of(RESERVE, SEARCH);
  private final ResponseMetadata onePrice = new ResponseMetadata().sessionId(7).price(1_234);
  private final ResponseMetadata withList = new ResponseMetadata().sessionId(7).price(1_234)
      .interfacePrices(InterfacePrices.of(new int[] {server.idOf(SEARCH), server.idOf(RESERVE)},
          new long[] {1_234, 480}));
  private final ResponseMetadata into = new ResponseMetadata();

  @Benchmark
  public long onePriceWrittenAndRead() {
    Metadata trailers = new Metadata();
    SpillwayMetadata.writeResponse(onePrice, trailers, server);
    SpillwayMetadata.readResponse(trailers, into, client);
    return into.price();
  }

  @Benchmark
  public long twoInterfacesWrittenAndRead() {
    Metadata trailers = new Metadata();
    SpillwayMetadata.writeResponse(withList, trailers, server);
    SpillwayMetadata.readResponse(trailers, into, client);
    return into.price() + into.interfacePrices().price(1);
  }
}
