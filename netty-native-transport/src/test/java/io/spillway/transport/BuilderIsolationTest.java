package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.Unpooled;
import io.spillway.api.NoControl;
import org.junit.jupiter.api.Test;

/** A builder changed or reused after build() does not reach the instance it built. */
class BuilderIsolationTest {

  @Test
  void aServerKeepsTheValuesItWasBuiltWith() {
    SpillwayServer.Builder b = SpillwayServer.builder().scheme(NoControl.INSTANCE)
        .handler((request, alloc) -> Unpooled.EMPTY_BUFFER).maxPayload(100)
        .threading(Threading.DISPATCH);
    SpillwayServer server = b.build();
    b.maxPayload(7).threading(Threading.LOOP_QUEUE);
    SpillwayServer second = b.build();
    assertEquals(100, server.maxPayload());
    assertEquals(Threading.DISPATCH, server.threading());
    assertEquals(7, second.maxPayload());
  }
}
