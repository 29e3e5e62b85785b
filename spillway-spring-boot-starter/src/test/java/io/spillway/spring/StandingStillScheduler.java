package io.spillway.spring;

import io.spillway.api.Scheduler;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * A scheduler whose tasks never run, in place of the starter's control timer: a gate's control
 * loop then never updates it, so a limit keeps the value it starts from.
 */
@TestConfiguration
class StandingStillScheduler {

  @Bean
  Scheduler spillwayScheduler() {
    return (task, delayNanos) -> () -> { };
  }
}
