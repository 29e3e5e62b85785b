package io.spillway.grpc;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * An in-process server and channels, both on direct executors: a call runs to completion on the
 * thread that makes it, so the tests are deterministic and need no waiting.
 */
final class InProcess implements AutoCloseable {

  private final String name = InProcessServerBuilder.generateName();
  private final Server server;
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final java.util.concurrent.atomic.AtomicInteger connections =
      new java.util.concurrent.atomic.AtomicInteger();

  InProcess(ServerServiceDefinition... services) {
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name).directExecutor();
    builder.addTransportFilter(new io.grpc.ServerTransportFilter() {
      @Override
      public io.grpc.Attributes transportReady(io.grpc.Attributes attributes) {
        connections.incrementAndGet();
        return attributes;
      }

      @Override
      public void transportTerminated(io.grpc.Attributes attributes) {
        connections.decrementAndGet();
      }
    });
    for (ServerServiceDefinition service : services) {
      builder.addService(service);
    }
    try {
      server = builder.build().start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The server's address, for a name resolver. */
  java.net.SocketAddress address() {
    return new io.grpc.inprocess.InProcessSocketAddress(name);
  }

  /** Client connections (transports) open to the server now. */
  int connections() {
    return connections.get();
  }

  /** A new channel to the server. */
  ManagedChannel channel() {
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    channels.add(channel);
    return channel;
  }

  @Override
  public void close() {
    for (ManagedChannel channel : channels) {
      channel.shutdownNow();
    }
    server.shutdownNow();
  }
}
