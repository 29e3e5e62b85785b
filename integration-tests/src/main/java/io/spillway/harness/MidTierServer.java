package io.spillway.harness;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import io.spillway.transport.SpillwayServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/**
 * The µTune experiment's mid-tier (mutune-osdi18 §6: a mid-tier that fans each query out to its
 * leaves and merges their answers), in its own process on core 0: a {@link SpillwayServer} under
 * a fixed or adaptive threading model whose handler is synchronous, as µTune's synchronous models
 * are (§3.2): it does its own share of the work, sends one request to each leaf, and blocks on
 * their replies. Each thread that runs requests (the network thread in-line, each worker under
 * dispatch) has its own blocking connection to each leaf, so a leaf reply wakes exactly the
 * thread that waits for it.
 *
 * <p>Usage: {@code MidTierServer LEAF_PORT LEAVES LOCAL_WORK_US MODEL|adaptive:PROFILE [breakwater:SLO_US]}.
 * Prints {@code SPILLWAY-PORT n}, serves until standard input closes; a line {@code model} on
 * standard input is answered {@code SPILLWAY-MODEL <model> <switches>}.
 */
public final class MidTierServer {

  private MidTierServer() { }

  public static void main(String[] args) throws Exception {
    int leafPort = Integer.parseInt(args[0]);
    int leaves = Integer.parseInt(args[1]);
    long localWorkNanos = Long.parseLong(args[2]) * 1_000;
    String threading = args[3];
    OverloadScheme scheme = NoControl.INSTANCE;
    if (args.length > 4 && args[4].startsWith("breakwater:")) {
      long slo = Long.parseLong(args[4].substring("breakwater:".length())) * 1_000;
      scheme = Breakwater.of(BreakwaterConfig.forSlo(slo, 50_000));
    }
    ThreadLocal<SocketChannel[]> connections = ThreadLocal.withInitial(() -> connect(leafPort, leaves));
    SpillwayServer.Builder b = SpillwayServer.builder().scheme(scheme).parallelism(1)
        .handler((req, alloc) -> fanOut(req, alloc, connections.get(), localWorkNanos));
    if (threading.startsWith("adaptive:")) {
      b.adaptiveThreading(ThreadingAdaptation.of(ThreadingProfile.read(Path.of(threading.substring(9)))));
    } else {
      b.threadingModel(ThreadingModel.parse(threading));
    }
    try (SpillwayServer server = b.build().start()) {
      System.err.println("mid-tier: " + threading + " on " + server.transport() + ", " + leaves
          + " leaves, scheme " + scheme.name());
      System.out.println(HarnessServer.PORT_LINE + server.port());
      System.out.flush();
      java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.strip().equals("model")) {
          System.out.println("SPILLWAY-MODEL " + server.threadingModel().orElseThrow() + " "
              + server.threadingSwitches() + " " + Math.round(server.estimatedArrivalRate()));
          System.out.flush();
        }
      }
    }
  }

  /** One blocking connection to each of {@code leaves} leaves at {@code port}. */
  public static SocketChannel[] connect(int port, int leaves) {
    SocketChannel[] c = new SocketChannel[leaves];
    try {
      for (int i = 0; i < leaves; i++) {
        c[i] = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
        c[i].setOption(StandardSocketOptions.TCP_NODELAY, true);
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("cannot reach the leaves at port " + port, e);
    }
    return c;
  }

  /** The mid-tier's own work, then one request per leaf, then every reply: synchronous fan-out. */
  static ByteBuf fanOut(ByteBuf req, ByteBufAllocator alloc, SocketChannel[] leaves, long localWorkNanos)
      throws IOException {
    return alloc.buffer(8).writeLong(query(leaves, localWorkNanos));
  }

  /**
   * The query itself, on the calling thread: {@code localWorkNanos} of CPU, one request to each leaf,
   * then a blocking read of every reply; returns the merged answer.
   */
  public static long query(SocketChannel[] leaves, long localWorkNanos) throws IOException {
    long end = System.nanoTime() + localWorkNanos;
    while (System.nanoTime() - end < 0) {
      Thread.onSpinWait();
    }
    ByteBuffer out = ByteBuffer.allocate(8);
    for (SocketChannel leaf : leaves) {
      out.clear();
      out.putLong(0, 1).limit(8);
      while (out.hasRemaining()) {
        leaf.write(out);
      }
    }
    long merged = 0;
    ByteBuffer in = ByteBuffer.allocate(8);
    for (SocketChannel leaf : leaves) {
      in.clear();
      while (in.hasRemaining()) {
        if (leaf.read(in) < 0) {
          throw new IOException("leaf closed");
        }
      }
      merged += in.getLong(0);
    }
    return merged;
  }

}
