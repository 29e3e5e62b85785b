package io.spillway.spring.jettyreactive;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A WebFlux application with the starter and its defaults, on Jetty: Reactor Netty's server is
 * excluded, as the starter's tests have both on the class path.
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.reactor.netty.autoconfigure.NettyReactiveWebServerAutoConfiguration")
public class JettyWebFluxTestApp {

  @RestController
  static class Hello {
    @GetMapping("/hello")
    Mono<String> hello() {
      return Mono.just("hello");
    }
  }
}
