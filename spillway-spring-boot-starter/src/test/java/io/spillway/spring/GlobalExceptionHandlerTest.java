package io.spillway.spring;

import io.spillway.spring.advice.AdviceTestApp;
import org.springframework.boot.test.context.SpringBootTest;

/** {@link GlobalExceptionHandlerContract} under Spring MVC on Tomcat. */
@SpringBootTest(classes = AdviceTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class GlobalExceptionHandlerTest extends GlobalExceptionHandlerContract {
}
