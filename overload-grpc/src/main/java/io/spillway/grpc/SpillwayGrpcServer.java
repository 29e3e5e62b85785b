package io.spillway.grpc;

import io.grpc.BindableService;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Ticker;
import java.util.Objects;

/**
 * An admission scheme wired into a gRPC server: the scheme's {@link ServerGate} (started), the
 * {@link SpillwayServerInterceptor} in front of the services, and the
 * {@link SpillwayControlService} that carries explicit credits, demand reports and
 * deregistrations. Build with {@link SpillwayGrpc#server}; add {@link #intercept} of each service
 * and {@link #controlService()} to the gRPC server; {@link #close()} when the server stops.
 *
 * <p>The gate steers by the server's queueing delay ({@link Builder#queueDelay}): give it the
 * delay of the executor that runs the handlers (for example a
 * {@code io.spillway.asqm.CarrierDispatcher} set as the gRPC server's executor), or delay-driven
 * schemes see an idle server.
 *
 * <p>Thread-safe.
 */
public final class SpillwayGrpcServer implements AutoCloseable {

  private final ServerGate gate;
  private final SpillwayServerInterceptor interceptor;
  private final SpillwayControlService control;

  private SpillwayGrpcServer(ServerGate gate, SpillwayServerInterceptor interceptor,
      SpillwayControlService control) {
    this.gate = gate;
    this.interceptor = interceptor;
    this.control = control;
  }

  /** A builder for {@code scheme}; see {@link SpillwayGrpc#server}. */
  public static Builder builder(OverloadScheme scheme) {
    return new Builder(scheme);
  }

  /** The interceptor that admits calls; put it on every service the scheme protects. */
  public SpillwayServerInterceptor interceptor() {
    return interceptor;
  }

  /** {@code service} behind the interceptor. */
  public ServerServiceDefinition intercept(BindableService service) {
    return ServerInterceptors.intercept(service, interceptor);
  }

  /** {@code service} behind the interceptor. */
  public ServerServiceDefinition intercept(ServerServiceDefinition service) {
    return ServerInterceptors.intercept(service, interceptor);
  }

  /** The {@code spillway.Control} service; add it to the server (unintercepted). */
  public ServerServiceDefinition controlService() {
    return control.serviceDefinition();
  }

  /** The control channel, for diagnostics. */
  public SpillwayControlService control() {
    return control;
  }

  /** The scheme's server gate. */
  public ServerGate gate() {
    return gate;
  }

  /** Stops the gate's control loop and ends the credit streams. */
  @Override
  public void close() {
    gate.close();
    control.close();
  }

  /** Configures a {@link SpillwayGrpcServer}. Not thread-safe. */
  public static final class Builder {
    private final OverloadScheme scheme;
    private Ticker ticker = Ticker.system();
    private Scheduler scheduler;
    private QueueDelaySignal queueDelay = QueueDelaySignal.NONE;
    private OverloadMetrics metrics = OverloadMetrics.NONE;
    private int parallelism = Runtime.getRuntime().availableProcessors();
    private InterfaceRegistry interfaces = new InterfaceRegistry();

    private Builder(OverloadScheme scheme) {
      this.scheme = Objects.requireNonNull(scheme, "scheme");
    }

    /** The clock; {@link Ticker#system()} by default. */
    public Builder ticker(Ticker value) {
      ticker = Objects.requireNonNull(value, "ticker");
      return this;
    }

    /** Runs the gate's control loop; by default one shared daemon timer thread. */
    public Builder scheduler(Scheduler value) {
      scheduler = Objects.requireNonNull(value, "scheduler");
      return this;
    }

    /** The server's queueing delay, summed over its stages; none by default. */
    public Builder queueDelay(QueueDelaySignal value) {
      queueDelay = Objects.requireNonNull(value, "queueDelay");
      return this;
    }

    /** Where the gate reports. */
    public Builder metrics(OverloadMetrics value) {
      metrics = Objects.requireNonNull(value, "metrics");
      return this;
    }

    /** Requests the server runs at once (cores or workers); the processors by default. */
    public Builder parallelism(int value) {
      parallelism = value;
      return this;
    }

    /** Numbers the methods; share it with anything else that reads interface ids. */
    public Builder interfaces(InterfaceRegistry value) {
      interfaces = Objects.requireNonNull(value, "interfaces");
      return this;
    }

    /** Creates and starts the gate. */
    public SpillwayGrpcServer build() {
      SpillwayControlService control = new SpillwayControlService(ticker);
      ServerGate gate = scheme.newServerGate(new ServerEnvironment(ticker,
          scheduler != null ? scheduler : SharedTimer.scheduler(), queueDelay, control, metrics,
          parallelism));
      control.bind(gate);
      gate.start();
      return new SpillwayGrpcServer(gate,
          new SpillwayServerInterceptor(gate, ticker, interfaces, control), control);
    }
  }
}
