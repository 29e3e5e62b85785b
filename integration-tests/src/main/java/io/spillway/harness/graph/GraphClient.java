package io.spillway.harness.graph;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoop;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.harness.graph.proto.GraphReply;
import io.spillway.harness.graph.proto.GraphRequest;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Scenario;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The load generator's side of the graph: {@code sessions} client sessions, each with its own
 * interceptors from the scheme's {@link GraphWiring}, multiplexed over {@code connections} gRPC
 * channels to each interface's front-end. All channels share one event loop, which also runs the
 * {@link GraphLoadGenerator}, and calls complete on it ({@code directExecutor}), so issuing and
 * recording need no locks.
 *
 * <p>Whether a call left the client is learnt from an interceptor placed below the scheme's,
 * next to the channel: it stamps {@link Call#sentAtNanos} when the call starts there. A call a
 * client gate rate-limits or expires never gets there.
 *
 * <p>Thread-safe for {@link #call} from the event loop; other methods from any thread.
 */
final class GraphClient implements AutoCloseable {

  /** A call in flight, from the load generator's point of view. */
  static final class Call {
    static final long NOT_SENT = Long.MIN_VALUE;

    final int iface;
    final long arrivalNanos;
    /** When the call left the client (the scheme's interceptors let it through), or NOT_SENT. */
    volatile long sentAtNanos = NOT_SENT;

    Call(int iface, long arrivalNanos) {
      this.iface = iface;
      this.arrivalNanos = arrivalNanos;
    }
  }

  /** What a call's end is reported to, on the event loop. */
  interface Outcome {
    void ended(Call call, Status status, GraphReply reply);
  }

  private static final CallOptions.Key<Call> CALL = CallOptions.Key.create("spillway-graph-call");

  private final CallGraph graph;
  private final GraphWiring wiring;
  private final Ticker ticker;
  private final boolean epoll;
  private final EventLoopGroup group;
  private final EventLoop loop;
  private final List<MethodDescriptor<GraphRequest, GraphReply>> methods;
  private final List<ManagedChannel> channels = new ArrayList<>();
  /** Client interceptors to close (client sessions end: queued calls fail, credits go back). */
  private final List<AutoCloseable> closeables = new ArrayList<>();
  /** Per interface, per session: the channel a session calls that interface's front-end on. */
  private final Channel[][] sessions;

  GraphClient(Scenario scenario, Map<String, Integer> ports, GraphWiring wiring, int sessionCount,
      int connections) {
    this.graph = scenario.callGraph();
    this.wiring = wiring;
    this.ticker = Ticker.system();
    // Epoll where it loads: its timers (timerfd) wake the loop to the microsecond, so the load
    // generator can sleep between arrivals; NIO's wait has millisecond resolution.
    this.epoll = Epoll.isAvailable();
    this.group = new MultiThreadIoEventLoopGroup(1, epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
    this.loop = group.next();
    this.methods = GraphMethods.frontEnd(graph);
    Map<String, List<Channel>> roots = new LinkedHashMap<>();
    for (CallGraph.Interface i : graph.interfaces()) {
      String root = i.root().service().name();
      if (!roots.containsKey(root)) {
        Integer port = ports.get(root);
        if (port == null) {
          throw new IllegalArgumentException("no port for front-end service '" + root + "'");
        }
        List<Channel> marked = new ArrayList<>();
        for (int c = 0; c < connections; c++) {
          ManagedChannel channel = NettyChannelBuilder
              .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))
              .usePlaintext()
              .eventLoopGroup(group)
              .channelType(epoll ? EpollSocketChannel.class : NioSocketChannel.class, InetSocketAddress.class)
              .directExecutor()
              .build();
          channels.add(channel);
          marked.add(ClientInterceptors.intercept(channel, new SentMarker()));
        }
        roots.put(root, marked);
      }
    }
    Scheduler scheduler = Scheduler.of(loop);
    sessions = new Channel[graph.interfaces().size()][sessionCount];
    for (int s = 0; s < sessionCount; s++) {
      Map<String, Channel> perFrontEnd = new LinkedHashMap<>();
      for (CallGraph.Interface i : graph.interfaces()) {
        CallGraph.Service root = i.root().service();
        int session = s;
        sessions[i.index()][s] = perFrontEnd.computeIfAbsent(root.name(), name -> {
          List<ClientInterceptor> interceptors = wiring.clientInterceptors(
              new GraphWiring.ClientSite(session, root, graph, scenario, methods, ticker, scheduler));
          for (ClientInterceptor c : interceptors) {
            if (c instanceof AutoCloseable closeable) {
              closeables.add(closeable);
            }
          }
          return ClientInterceptors.interceptForward(roots.get(name).get(session % connections), interceptors);
        });
      }
    }
  }

  /** Whether the event loop is epoll's (precise timers) rather than NIO's. */
  boolean preciseTimers() {
    return epoll;
  }

  EventLoop eventLoop() {
    return loop;
  }

  Ticker ticker() {
    return ticker;
  }

  CallGraph graph() {
    return graph;
  }

  int sessionCount() {
    return sessions[0].length;
  }

  GraphWiring wiring() {
    return wiring;
  }

  /** Opens every connection now, so the first measured calls do not pay for it. */
  void connect() {
    for (ManagedChannel channel : channels) {
      channel.getState(true);
    }
  }

  /** Issues {@code call} from {@code session}; {@code outcome} hears its end on the event loop. */
  void call(int session, Call call, long id, Outcome outcome) {
    ClientCall<GraphRequest, GraphReply> c = sessions[call.iface][session]
        .newCall(methods.get(call.iface), CallOptions.DEFAULT.withOption(CALL, call));
    GraphReply[] reply = new GraphReply[1];
    ClientCall.Listener<GraphReply> listener = new ClientCall.Listener<>() {
      @Override
      public void onMessage(GraphReply message) {
        reply[0] = message;
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (loop.inEventLoop()) {
          outcome.ended(call, status, reply[0]);
        } else {
          loop.execute(() -> outcome.ended(call, status, reply[0]));
        }
      }
    };
    try {
      c.start(listener, new Metadata());
    } catch (RuntimeException e) {
      // Never started, so the listener will not hear of it.
      outcome.ended(call, Status.fromThrowable(e), null);
      return;
    }
    try {
      c.request(1);
      c.sendMessage(GraphRequest.newBuilder().setId(id).build());
      c.halfClose();
    } catch (RuntimeException e) {
      c.cancel("load generator failed to send the request", e); // the listener hears of it
    }
  }

  /** Ends the sessions, then closes the channels and the event loop; waits a few seconds at most. */
  @Override
  public void close() {
    for (AutoCloseable c : closeables) {
      try {
        c.close();
      } catch (Exception e) {
        System.err.println("graph client: closing a session failed: " + e);
      }
    }
    for (ManagedChannel channel : channels) {
      channel.shutdown(); // calls already started (deregistrations) may finish
    }
    try {
      for (ManagedChannel channel : channels) {
        if (!channel.awaitTermination(2, TimeUnit.SECONDS)) {
          channel.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
        }
      }
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }
  }

  /** Stamps a call's departure when it reaches the channel, below every scheme interceptor. */
  private final class SentMarker implements ClientInterceptor {
    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
        Channel next) {
      Call call = options.getOption(CALL);
      ClientCall<Q, R> delegate = next.newCall(method, options);
      if (call == null) {
        return delegate;
      }
      return new ForwardingClientCall.SimpleForwardingClientCall<>(delegate) {
        @Override
        public void start(Listener<R> listener, Metadata headers) {
          call.sentAtNanos = ticker.read();
          super.start(listener, headers);
        }
      };
    }
  }
}
