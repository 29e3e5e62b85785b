package io.spillway.jmh;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.transport.internal.Frame;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Spillway's 64-byte frame header: validate + decode into a reused metadata object (what the
 * server does for every frame before admission; must allocate nothing), and encode. Baseline in the
 * same run: reading the same 64 bytes as eight longs, the floor for touching the header.
 *
 * <p>Run: {@code ./spillway jmh FrameCodecBenchmark -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class FrameCodecBenchmark {

  private ByteBuf request;
  private ByteBuf response;
  private ByteBuf out;
  private final RequestMetadata requestMeta = new RequestMetadata();
  private final ResponseMetadata responseMeta = new ResponseMetadata();
  private final RequestMetadata toEncode = new RequestMetadata().sessionId(42).requestId(7).demand(3)
      .creditId(9).tokens(100).interfaceId(2).budgetNanos(80_000).priority(5);

  @Setup(Level.Trial)
  public void setUp() {
    request = PooledByteBufAllocator.DEFAULT.directBuffer(Frame.HEADER_SIZE + 8);
    Frame.writeRequest(request, Frame.TYPE_REQUEST, toEncode, 8);
    request.writeLong(10_000);
    response = PooledByteBufAllocator.DEFAULT.directBuffer(Frame.HEADER_SIZE);
    Frame.writeResponse(response, Frame.TYPE_RESPONSE,
        new ResponseMetadata().sessionId(42).requestId(7).status(Status.OK).creditDelta(2), 0);
    out = PooledByteBufAllocator.DEFAULT.directBuffer(Frame.HEADER_SIZE);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    request.release();
    response.release();
    out.release();
  }

  @Benchmark
  public long decodeRequestHeader() {
    Frame.validate(request, Frame.DEFAULT_MAX_PAYLOAD);
    return Frame.readRequest(request, requestMeta).sessionId();
  }

  @Benchmark
  public int decodeResponseHeader() {
    Frame.validate(response, Frame.DEFAULT_MAX_PAYLOAD);
    return Frame.readResponse(response, responseMeta).creditDelta();
  }

  @Benchmark
  public int encodeRequestHeader() {
    out.clear();
    Frame.writeRequest(out, Frame.TYPE_REQUEST, toEncode, 8);
    return out.writerIndex();
  }

  @Benchmark
  public long baselineReadEightLongs() {
    long x = 0;
    int b = request.readerIndex();
    for (int i = 0; i < 8; i++) {
      x ^= request.getLong(b + 8 * i);
    }
    return x;
  }
}
