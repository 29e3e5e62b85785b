package io.spillway.kv;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.api.Status;
import io.spillway.transport.RequestHandler;

/**
 * The KV operations over Spillway's native frame ({@link KvFrameCodec}'s layout), served by the
 * same {@link KvStore}, with the same budgeted locks, as the text protocol. The transport's gate
 * (credits) has admitted the request before this runs; here it runs with Protego's queueing
 * budget in scope (protego-nsdi23 §3.2: the server's target delay minus the running p99 service
 * time, or the budget the client sent if that is smaller), so a slab, item or LRU lock whose
 * queue would make it late throws {@link BudgetExceededException}, which the transport answers
 * with a header-only {@code REJECTED_BUDGET}: the fast reject a client may retry on a replica
 * (§5.3). A SET refused after its chunk was reserved frees the chunk under the plain acquire
 * ({@link KvStore#store}), so a refusal never leaks memory.
 *
 * <p>A payload that does not parse gets a {@code CLIENT_ERROR} response saying why; the handler
 * never throws for bad input, so a malformed request neither fails as a handler error nor
 * disturbs the connection.
 *
 * <p>Thread-safe: stateless apart from the store and the server's counters.
 */
final class KvFrameHandler implements RequestHandler {

  private final KvServer server;
  private final KvStore store;

  KvFrameHandler(KvServer server) {
    this.server = server;
    this.store = server.store();
  }

  @Override
  public ByteBuf handle(ByteBuf in, ByteBufAllocator alloc) {
    long start = server.ticker().read();
    int size = in.readableBytes();
    if (size < 2) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.CLIENT_ERROR,
          "request of " + size + " bytes: an op and a key length are 2");
    }
    int op = in.readUnsignedByte();
    int keyLength = in.readUnsignedByte();
    if (op != KvFrameCodec.OP_GET && op != KvFrameCodec.OP_SET && op != KvFrameCodec.OP_DELETE) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.CLIENT_ERROR, "unknown op " + op);
    }
    if (keyLength == 0 || keyLength > KvStore.MAX_KEY_LENGTH) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.CLIENT_ERROR,
          "key length " + keyLength + ": must be 1 to " + KvStore.MAX_KEY_LENGTH);
    }
    if (in.readableBytes() < keyLength) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.CLIENT_ERROR,
          "key of " + keyLength + " bytes declared, " + in.readableBytes() + " present");
    }
    if (op != KvFrameCodec.OP_SET && in.readableBytes() != keyLength) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.CLIENT_ERROR,
          (in.readableBytes() - keyLength) + " bytes after the key of a " + (op == KvFrameCodec.OP_GET ? "GET" : "DELETE"));
    }
    if (op == KvFrameCodec.OP_SET && in.readableBytes() < keyLength + KvFrameCodec.SET_FIELDS) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.CLIENT_ERROR,
          "SET without its flags and exptime");
    }
    if (op == KvFrameCodec.OP_SET
        && in.readableBytes() - keyLength - KvFrameCodec.SET_FIELDS > SlabAllocator.PAGE_SIZE) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.SERVER_ERROR, "object too large for cache");
    }
    byte[] key = new byte[keyLength];
    in.readBytes(key);
    RequestBudget budget = budget();
    long chargedAtStart = budget == null ? 0 : budget.chargedNanos();
    ByteBuf response;
    try {
      response = switch (op) {
        case KvFrameCodec.OP_GET -> ScopedValue.where(RequestBudget.CURRENT, budget)
            .call(() -> get(key, start, alloc));
        case KvFrameCodec.OP_SET -> ScopedValue.where(RequestBudget.CURRENT, budget)
            .call(() -> set(key, in, start, alloc));
        default -> ScopedValue.where(RequestBudget.CURRENT, budget)
            .call(() -> alloc.buffer(1).writeByte(store.delete(key, start) ? KvFrameCodec.OK : KvFrameCodec.NOT_FOUND));
      };
    } catch (BudgetExceededException e) {
      server.refused(Status.REJECTED_BUDGET);
      throw e;
    } catch (KvStore.StoreFailure e) {
      return KvFrameCodec.error(alloc.buffer(64), KvFrameCodec.SERVER_ERROR, e.getMessage());
    }
    // its waits for the store's budgeted locks are queueing, not service
    // (RequestBudget#chargedNanos)
    long blocked = budget == null ? 0 : budget.chargedNanos() - chargedAtStart;
    server.served(Math.max(0, server.ticker().read() - start - blocked));
    return response;
  }

  /**
   * The server's budget for a request starting now, or the one the transport bound (what the
   * client sent, less its wait on the server) if that is smaller; {@code null} when neither.
   */
  private RequestBudget budget() {
    RequestBudget own = server.budget();
    RequestBudget sent = RequestBudget.currentOrNull();
    if (own == null || (sent != null && sent.remainingNanos() < own.remainingNanos())) {
      return sent;
    }
    return own;
  }

  private ByteBuf get(byte[] key, long now, ByteBufAllocator alloc) {
    ByteBuf[] hit = new ByteBuf[1];
    store.get(key, now, (k, flags, cas, page, offset, length) ->
        hit[0] = alloc.buffer(5 + length).writeByte(KvFrameCodec.OK).writeInt(flags).writeBytes(page, offset, length));
    return hit[0] != null ? hit[0] : alloc.buffer(1).writeByte(KvFrameCodec.NOT_FOUND);
  }

  private ByteBuf set(byte[] key, ByteBuf in, long now, ByteBufAllocator alloc) {
    int flags = in.readInt();
    int exptime = in.readInt();
    int length = in.readableBytes();
    int chunk = store.reserve(length, now);
    in.readBytes(store.page(chunk), store.offset(chunk), length);
    // the chunk is consumed in every outcome, also when the item lock refuses the request
    KvStore.StoreResult r = store.store(KvStore.Mode.SET, key, flags, exptime, 0, chunk, length, now);
    return alloc.buffer(1).writeByte(r == KvStore.StoreResult.STORED ? KvFrameCodec.OK : KvFrameCodec.NOT_FOUND);
  }
}
