package io.spillway.grpc;

import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Map;

/**
 * Registers the {@code spillway_per_backend} load-balancing policy that
 * {@link PerBackendSessions#install} sets on a channel: one subchannel per backend, each call sent
 * to the backend whose session it waited in. Found by gRPC's {@code ServiceLoader} lookup and
 * registered again by {@link PerBackendSessions} itself, so it is there however the class path
 * is assembled. It takes no configuration of its own; a service config's {@code healthCheckConfig}
 * is honoured where grpc-services is on the class path. Thread-safe.
 */
public final class PerBackendLoadBalancerProvider extends LoadBalancerProvider {

  /** The policy's name, for {@code ManagedChannelBuilder.defaultLoadBalancingPolicy}. */
  public static final String POLICY = "spillway_per_backend";

  /** For gRPC's {@code ServiceLoader}. */
  public PerBackendLoadBalancerProvider() { }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public int getPriority() {
    return 5;
  }

  @Override
  public String getPolicyName() {
    return POLICY;
  }

  @Override
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    if (HEALTH_CHECKING != null) {
      try {
        return (LoadBalancer) HEALTH_CHECKING.invokeExact(PER_BACKEND, helper);
      } catch (Throwable e) {
        LOG.log(System.Logger.Level.WARNING, "gRPC's health-checking balancer could not wrap "
            + POLICY + "; running it without client-side health checks", e);
      }
    }
    return new PerBackendLoadBalancer(helper);
  }

  private static final System.Logger LOG =
      System.getLogger(PerBackendLoadBalancerProvider.class.getName());

  private static final LoadBalancer.Factory PER_BACKEND = new LoadBalancer.Factory() {
    @Override
    public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
      return new PerBackendLoadBalancer(helper);
    }
  };

  /**
   * grpc-services' {@code HealthCheckingLoadBalancerUtil.newHealthCheckingLoadBalancer}, if it is
   * on the class path: it runs the client-side health checks a service config asks for
   * ({@code healthCheckConfig}) on the balancer's subchannels, as it does for {@code round_robin},
   * so a backend whose health service says NOT_SERVING reads as down and takes no calls. Looked up
   * by reflection, so overload-grpc does not depend on grpc-services (Spring gRPC's servers bring
   * it).
   */
  private static final MethodHandle HEALTH_CHECKING = healthChecking();

  private static MethodHandle healthChecking() {
    try {
      Class<?> util = Class.forName("io.grpc.protobuf.services.HealthCheckingLoadBalancerUtil",
          false, LoadBalancer.class.getClassLoader());
      return MethodHandles.publicLookup().findStatic(util, "newHealthCheckingLoadBalancer",
          MethodType.methodType(LoadBalancer.class, LoadBalancer.Factory.class,
              LoadBalancer.Helper.class));
    } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
      return null;
    }
  }

  @Override
  public NameResolver.ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return NameResolver.ConfigOrError.fromConfig("no config");
  }
}
