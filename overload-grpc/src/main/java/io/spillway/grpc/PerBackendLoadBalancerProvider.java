package io.spillway.grpc;

import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver;
import java.util.Map;

/**
 * Registers the {@code spillway_per_backend} load-balancing policy that
 * {@link PerBackendSessions#install} sets on a channel: one subchannel per backend, each call sent
 * to the backend whose session it waited in. Found by gRPC's {@code ServiceLoader} lookup and
 * registered again by {@link PerBackendSessions} itself, so it is there however the class path
 * is assembled. It takes no configuration. Thread-safe.
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
    return new PerBackendLoadBalancer(helper);
  }

  @Override
  public NameResolver.ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return NameResolver.ConfigOrError.fromConfig("no config");
  }
}
