package io.spillway.spring;

import io.spillway.spring.reactiveadvice.ReactiveAdviceTestApp;
import org.springframework.boot.test.context.SpringBootTest;

/** {@link GlobalExceptionHandlerContract} under WebFlux on Reactor Netty. */
@SpringBootTest(classes = ReactiveAdviceTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.main.web-application-type=reactive")
class WebFluxGlobalExceptionHandlerTest extends GlobalExceptionHandlerContract {
}
