package io.spillway.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The application: handles one admitted request. Runs on the server's dispatcher (a virtual thread
 * by default), never on an event loop, so it may block. If the request carries a queueing budget,
 * it is bound in {@link io.spillway.api.RequestBudget#CURRENT} while this runs, so budgeted locks
 * inside can abort it early. A request whose client sent a budget (what was left after its client
 * queue) and that has waited on the server until that is spent is aborted ({@code
 * REJECTED_BUDGET}) without calling this.
 *
 * <p>Buffer ownership: {@code request} belongs to the transport and is released after this returns
 * (retain it to keep it). The returned buffer is handed to the transport, which writes and releases
 * it; return {@link io.netty.buffer.Unpooled#EMPTY_BUFFER} for an empty response.
 */
@FunctionalInterface
public interface RequestHandler {

  /**
   * @return the response payload; throwing fails the request (the client gets a {@code FAILED}
   *     status), throwing a budget-exceeded exception aborts it ({@code REJECTED_BUDGET})
   */
  ByteBuf handle(ByteBuf request, ByteBufAllocator alloc) throws Exception;
}
