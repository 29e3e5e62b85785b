package io.spillway.spring.internal;

import io.spillway.api.ControlChannel;
import io.spillway.api.CpuQuotaDelay;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Ticker;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.Spillway;
import io.spillway.grpc.EventLoopProbe;
import io.spillway.spring.GateStats;
import io.spillway.spring.ServerQueueDelay;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayProperties;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.thread.Threading;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * Protects every Spring MVC and WebFlux endpoint with nothing but the starter on the class path:
 * the {@code spillway.*} properties, one gate per endpoint group, the server's measured queueing
 * delay, the servlet filter or WebFilter, and the measurement of Tomcat's or Jetty's workers.
 * Backs off entirely with {@code spillway.enabled=false}. Replace the scheme with an {@link
 * OverloadScheme} bean, the clock with a {@link Ticker} bean, the control loop's timer with a
 * {@link Scheduler} bean; add a queueing stage of the application's own with a {@link
 * QueueDelaySignal} bean.
 */
@AutoConfiguration
@ConditionalOnBooleanProperty(name = "spillway.enabled", matchIfMissing = true)
@EnableConfigurationProperties(SpillwayProperties.class)
public class SpillwayAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  Ticker spillwayTicker() {
    return Ticker.system();
  }

  @Bean
  @ConditionalOnMissingBean(Scheduler.class)
  ControlTimer spillwayScheduler() {
    return new ControlTimer();
  }

  @Bean
  UnknownProperties spillwayUnknownProperties(Environment environment) {
    return new UnknownProperties(environment);
  }

  /**
   * The application's queueing delay: its own stages, and a container's CPU limit where the
   * process has one (CpuQuotaDelay), measured for every web stack.
   */
  @Bean
  ServerQueueDelay spillwayServerQueueDelay(Map<String, QueueDelaySignal> stages, Ticker ticker) {
    ServerQueueDelay delay = new ServerQueueDelay();
    CpuQuotaDelay.detect(ticker).ifPresent(quota -> delay.addMeasured("cpu-quota", quota));
    stages.forEach(delay::addStage);
    return delay;
  }

  /**
   * Wraps HikariCP DataSource beans in a BudgetedDataSource (BudgetedDataSourceWrapper says why
   * and how). Static, as a bean post-processor must be, so that it does not instantiate this
   * configuration early.
   */
  @Bean
  @ConditionalOnBooleanProperty(name = "spillway.jdbc.enabled", matchIfMissing = true)
  static BudgetedDataSourceWrapper spillwayDataSourceWrapper(ObjectProvider<Ticker> ticker) {
    return new BudgetedDataSourceWrapper(ticker);
  }

  /** The credit streams of Spillway sessions, every endpoint gate's explicit credits. */
  @Bean(destroyMethod = "endAll")
  HttpCreditStreams spillwayCreditStreams() {
    return new HttpCreditStreams();
  }

  /**
   * Ends the credit streams as the application starts to stop, before the web server's graceful
   * shutdown (lifecycles stop in descending phase; this one has the default, the highest), which
   * waits for requests in progress and would wait out its timeout for the streams.
   */
  @Bean
  SmartLifecycle spillwayCreditStreamsLifecycle(HttpCreditStreams streams) {
    return new SmartLifecycle() {
      private volatile boolean running;

      @Override
      public void start() {
        running = true;
      }

      @Override
      public void stop() {
        running = false;
        streams.endAll();
      }

      @Override
      public boolean isRunning() {
        return running;
      }
    };
  }

  @Bean(destroyMethod = "close")
  SpillwayHttpGate spillwayHttpGate(SpillwayProperties properties, Ticker ticker,
      Scheduler scheduler, ServerQueueDelay delay, ObjectProvider<OverloadScheme> scheme,
      HttpCreditStreams credits) {
    OverloadScheme custom = scheme.getIfUnique();
    long slo = properties.getSlo().toNanos();
    Duration target = properties.getBudget().getTarget();
    // Each gate's explicit credits are named by its index in SpillwayHttpGate#routes: the
    // default endpoint 0, the overrides 1, 2, ... in order.
    SpillwayHttpGate.Endpoint defaults = endpoint("default", "/**", true, slo,
        target != null ? target.toNanos() : slo, properties, custom, ticker, scheduler, delay,
        credits.channel(0));
    List<SpillwayHttpGate.Endpoint> overrides = new ArrayList<>();
    for (SpillwayProperties.Endpoint e : properties.getEndpoints()) {
      long s = e.getSlo() != null ? e.getSlo().toNanos() : slo;
      long t = e.getBudgetTarget() != null ? e.getBudgetTarget().toNanos() : s;
      overrides.add(endpoint(e.getName() != null ? e.getName() : e.getPath(), e.getPath(),
          e.isEnabled(), s, t, properties, custom, ticker, scheduler, delay,
          credits.channel(overrides.size() + 1)));
    }
    return new SpillwayHttpGate(ticker, delay.signal(), defaults, overrides,
        properties.getExcludedPaths(), properties.getBudget().getWhenAbsent(),
        properties.getJfr().isEnabled(), properties.getJfr().getAdmittedSampleEvery());
  }

  private static SpillwayHttpGate.Endpoint endpoint(String name, String pattern, boolean enabled,
      long sloNanos, long targetNanos, SpillwayProperties properties, OverloadScheme custom,
      Ticker ticker, Scheduler scheduler, ServerQueueDelay delay, ControlChannel credits) {
    OverloadScheme scheme = custom != null ? custom : scheme(properties.getScheme(), sloNanos);
    GateStats stats = new GateStats(name);
    ServerGate gate = scheme.newServerGate(new ServerEnvironment(ticker, scheduler, delay.signal(),
        credits, stats, properties.getParallelism(), true)); // the filters report starts
    gate.start();
    return new SpillwayHttpGate.Endpoint(name, pattern, enabled, gate, sloNanos, targetNanos,
        stats, scheme.issuesCredits());
  }

  /** The scheme {@code spillway.scheme} names (validated by {@link SpillwayProperties}). */
  static OverloadScheme scheme(String name, long sloNanos) {
    return switch (name) {
      case "breakwater" -> Breakwater.of(
          BreakwaterConfig.forSlo(sloNanos, Spillway.defaultPeriodNanos(sloNanos)));
      case "none" -> NoControl.INSTANCE;
      default -> Spillway.forSloNanos(sloNanos);
    };
  }

  /** Spring MVC on a servlet container. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(name = "jakarta.servlet.Filter")
  static class Servlet {

    /**
     * The kernel's run queue, where requests wait while fewer are in flight than the container has
     * threads (RunQueueDelay), and the run slots that keep them in a queue of their own instead
     * (RunSlots), sized from the same samples; combined with the worker queue by their maximum.
     */
    @Bean
    ServletStages spillwayServletStages(ServerQueueDelay delay, Ticker ticker,
        SpillwayProperties properties, Environment environment,
        ConfigurableListableBeanFactory beans) {
      return new ServletStages(ticker, delay, properties.getParallelism(),
          containerThreads(beans, environment));
    }

    /**
     * The request threads of the container that runs: {@code server.jetty.threads.max} when the
     * application's web server factory is Jetty's, else {@code server.tomcat.threads.max} (200
     * unless set, for both). Read from the factory bean's type, not from the class path, on which
     * both containers may be; a deployed WAR has no factory bean and gets Tomcat's.
     */
    static int containerThreads(ConfigurableListableBeanFactory beans, Environment environment) {
      ClassLoader loader = beans.getBeanClassLoader();
      if (ClassUtils.isPresent(JETTY_FACTORY, loader) && beans.getBeanNamesForType(
          ClassUtils.resolveClassName(JETTY_FACTORY, loader), true, false).length > 0) {
        return JettyWorkersCustomizer.Threads.from(environment).max();
      }
      return environment.getProperty("server.tomcat.threads.max", Integer.class, 200);
    }

    @Bean
    FilterRegistrationBean<SpillwayServletFilter> spillwayServletFilter(SpillwayHttpGate gate,
        ServletStages stages, HttpCreditStreams credits, SpillwayProperties properties) {
      FilterRegistrationBean<SpillwayServletFilter> registration = new FilterRegistrationBean<>(
          new SpillwayServletFilter(gate, stages.runQueue(), stages.slots(),
              gate.issuesCredits() ? credits : null, properties.getRejectStatus()));
      registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
      registration.setAsyncSupported(true);
      // the async re-dispatch too: a session's asynchronous answer gets its fields as it returns
      registration.setDispatcherTypes(jakarta.servlet.DispatcherType.REQUEST,
          jakarta.servlet.DispatcherType.ASYNC);
      registration.setName("spillway");
      return registration;
    }

    /**
     * A budget abort stays a fast reject when the application's own exception handlers would map it
     * (BudgetAbortExceptionResolver); with Spring MVC only. A class of its own, so that a servlet
     * application without Spring MVC never loads the resolver's type.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.web.servlet.HandlerExceptionResolver")
    static class MvcExceptions {
      @Bean
      BudgetAbortExceptionResolver spillwayBudgetAbortResolver() {
        return new BudgetAbortExceptionResolver();
      }
    }

    /** Jetty's servlet factory, whose bean tells that Jetty is the container. */
    static final String JETTY_FACTORY =
        "org.springframework.boot.jetty.servlet.JettyServletWebServerFactory";

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.apache.catalina.startup.Tomcat",
        "org.springframework.boot.tomcat.ConfigurableTomcatWebServerFactory"})
    static class TomcatWorkers {
      @Bean
      TomcatWorkersCustomizer spillwayTomcatWorkers(ServerQueueDelay delay, Ticker ticker,
          SpillwayProperties properties, Environment environment) {
        return new TomcatWorkersCustomizer(delay, ticker, Threading.VIRTUAL.isActive(environment),
            properties.getParallelism(),
            environment.getProperty("server.tomcat.threads.max", Integer.class, 200),
            environment.getProperty("server.tomcat.threads.min-spare", Integer.class, 10));
      }
    }
  }

  /** Jetty's request workers, for Spring MVC and WebFlux on Jetty. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication
  @ConditionalOnClass(name = {"org.eclipse.jetty.server.Server",
      "org.springframework.boot.jetty.JettyWebServerFactory"})
  static class JettyWorkers {
    @Bean
    JettyWorkersCustomizer spillwayJettyWorkers(ServerQueueDelay delay, Ticker ticker,
        SpillwayProperties properties, Environment environment) {
      return new JettyWorkersCustomizer(delay, ticker, Threading.VIRTUAL.isActive(environment),
          properties.getParallelism(), JettyWorkersCustomizer.Threads.from(environment));
    }
  }

  /** WebFlux, on Reactor Netty or another reactive server. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  @ConditionalOnClass(name = "org.springframework.web.server.WebFilter")
  static class Reactive {

    @Bean
    SpillwayWebFilter spillwayWebFilter(SpillwayHttpGate gate, ServerQueueDelay delay,
        Ticker ticker, HttpCreditStreams credits, SpillwayProperties properties) {
      EventLoopProbe probe = null;
      if (EventLoopProbe.available()) {
        probe = new EventLoopProbe(ticker);
        delay.addMeasured("netty-event-loops", probe);
      }
      return new SpillwayWebFilter(gate, probe, gate.issuesCredits() ? credits : null,
          properties.getRejectStatus());
    }

    /** A budget abort stays a fast reject past the application's own exception handlers. */
    @Bean
    BudgetAbortAdvice spillwayBudgetAbortAdvice() {
      return new BudgetAbortAdvice();
    }
  }
}
