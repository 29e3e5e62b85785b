package io.spillway.harness;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A leaf of the µTune experiments' mid-tier (docs/results/mutune.md): answers each 8-byte request
 * with the same 8 bytes after a fixed delay, on its channel's event loop. The delay stands for a
 * leaf's work on a machine of its own (mutune-osdi18 §6), so it costs this loop no CPU while it runs.
 *
 * <p>Not sharable: one instance per channel (it accumulates bytes). Runs on the channel's loop.
 */
public final class LeafHandler extends ByteToMessageDecoder {

  private final long delayNanos;

  public LeafHandler(long delayNanos) {
    this.delayNanos = delayNanos;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    while (in.readableBytes() >= 8) {
      long value = in.readLong();
      ctx.executor().schedule(() -> {
        ctx.writeAndFlush(ctx.alloc().buffer(8).writeLong(value));
      }, delayNanos, TimeUnit.NANOSECONDS);
    }
  }
}
