package io.spillway.transport.internal;

import io.netty.buffer.ByteBuf;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;

/**
 * Spillway's binary frame: a fixed 64-byte header carrying the overload metadata of
 * docs/design.md ("Wire metadata"), then an opaque payload. Big-endian.
 *
 * <pre>
 *  offset size field
 *   0     2   magic 0x5350 ("SP")
 *   2     1   version (1)
 *   3     1   type: 1 request, 2 response, 3 credit, 4 demand, 5 deregister
 *   4     2   flags (request: register, deregister)
 *   6     1   status code (response; {@link Status#code()})
 *   7     1   reserved, 0
 *   8     8   session id
 *  16     8   request id
 *  24     4   request: demand; response/credit: signed credit delta
 *  28     4   request: interface id; response/credit: credit window after the change
 *  32     8   credit id
 *  40     8   request: tokens; response: price ({@link ResponseMetadata#NO_PRICE} when absent)
 *  48     8   request: remaining budget in ns ({@link Long#MAX_VALUE} when none);
 *             response/credit: the credit window's stamp ({@link ResponseMetadata#creditSeq()},
 *             0 when the window is not sent)
 *  56     4   request: priority; response: threshold
 *  60     4   payload length
 *  64     …   payload
 * </pre>
 *
 * <p>The header alone carries what a server decides on, its payload's length last, so a request
 * can be admitted or refused before any of its payload has arrived ({@code ServerFrameHandler}).
 *
 * <p>Decoding reads fields straight from the buffer into a caller-owned, reusable
 * {@link RequestMetadata} or {@link ResponseMetadata}: it allocates nothing. A header that is not
 * well-formed raises {@link FrameException}; the connection that sent it is then closed.
 *
 * <p>A response carries the answered interface's price only: the prices of a server's other
 * interfaces ({@link ResponseMetadata#interfacePrices()}) do not fit a fixed header and are left
 * out. They travel over gRPC ({@code spillway-prices}) and in the simulator.
 *
 * <p>Stateless and thread-safe.
 */
public final class Frame {

  /** Size of the fixed header in bytes. */
  public static final int HEADER_SIZE = 64;
  /** The magic number that starts every frame. */
  public static final int MAGIC = 0x5350;
  /** The wire version this class writes and reads. */
  public static final int VERSION = 1;
  /** The default largest payload accepted, 1 MiB. */
  public static final int DEFAULT_MAX_PAYLOAD = 1 << 20;

  public static final int TYPE_REQUEST = 1;
  public static final int TYPE_RESPONSE = 2;
  public static final int TYPE_CREDIT = 3;
  public static final int TYPE_DEMAND = 4;
  public static final int TYPE_DEREGISTER = 5;

  private static final int OFF_MAGIC = 0;
  private static final int OFF_VERSION = 2;
  private static final int OFF_TYPE = 3;
  private static final int OFF_FLAGS = 4;
  private static final int OFF_STATUS = 6;
  private static final int OFF_SESSION = 8;
  private static final int OFF_REQUEST = 16;
  private static final int OFF_DEMAND_OR_DELTA = 24;
  private static final int OFF_INTERFACE = 28;
  private static final int OFF_CREDIT_WINDOW = 28;
  private static final int OFF_CREDIT_ID = 32;
  private static final int OFF_TOKENS_OR_PRICE = 40;
  private static final int OFF_BUDGET = 48;
  private static final int OFF_CREDIT_SEQ = 48;
  private static final int OFF_PRIORITY_OR_THRESHOLD = 56;
  private static final int OFF_PAYLOAD_LENGTH = 60;

  private Frame() { }

  /**
   * Checks the header at the buffer's reader index (which must have {@link #HEADER_SIZE} readable
   * bytes) without moving it, and returns the frame type.
   *
   * @throws FrameException if the magic, version, type, reserved byte or payload length is wrong
   */
  public static int validate(ByteBuf in, int maxPayload) {
    int base = in.readerIndex();
    int magic = in.getUnsignedShort(base + OFF_MAGIC);
    if (magic != MAGIC) {
      throw new FrameException("bad magic 0x" + Integer.toHexString(magic));
    }
    int version = in.getUnsignedByte(base + OFF_VERSION);
    if (version != VERSION) {
      throw new FrameException("unsupported frame version " + version + " (this end speaks " + VERSION + ")");
    }
    int type = in.getUnsignedByte(base + OFF_TYPE);
    if (type < TYPE_REQUEST || type > TYPE_DEREGISTER) {
      throw new FrameException("unknown frame type " + type);
    }
    if (in.getUnsignedByte(base + 7) != 0) {
      throw new FrameException("reserved header byte is not zero");
    }
    long length = payloadLength(in);
    if (length < 0 || length > maxPayload) {
      throw new FrameException("payload length " + length + " exceeds the limit of " + maxPayload);
    }
    if (type != TYPE_REQUEST && type != TYPE_RESPONSE && length != 0) {
      throw new FrameException("control frame of type " + type + " carries a payload of " + length);
    }
    return type;
  }

  /** The payload length of the header at the reader index, unsigned. */
  public static long payloadLength(ByteBuf in) {
    return in.getUnsignedInt(in.readerIndex() + OFF_PAYLOAD_LENGTH);
  }

  /**
   * Whether the frame whose header is at the reader index (at least {@link #HEADER_SIZE} readable
   * bytes, checked by {@link #validate}) has all {@code payloadLength} bytes of its payload
   * readable. Compared without adding the header's size to the length: under a limit near {@link
   * Integer#MAX_VALUE} that sum overflows, and a header alone would pass for a whole frame.
   */
  public static boolean isWhole(ByteBuf in, int payloadLength) {
    return in.readableBytes() - HEADER_SIZE >= payloadLength;
  }

  /** The frame type of the header at the reader index. */
  public static int type(ByteBuf in) {
    return in.getUnsignedByte(in.readerIndex() + OFF_TYPE);
  }

  /** Reads a request header at the reader index into {@code into}; moves nothing, allocates nothing. */
  public static RequestMetadata readRequest(ByteBuf in, RequestMetadata into) {
    int b = in.readerIndex();
    return into.reset()
        .flags(in.getUnsignedShort(b + OFF_FLAGS))
        .sessionId(in.getLong(b + OFF_SESSION))
        .requestId(in.getLong(b + OFF_REQUEST))
        .demand(Math.max(0, in.getInt(b + OFF_DEMAND_OR_DELTA)))
        .interfaceId(in.getInt(b + OFF_INTERFACE))
        .creditId(in.getLong(b + OFF_CREDIT_ID))
        .tokens(in.getLong(b + OFF_TOKENS_OR_PRICE))
        .budgetNanos(in.getLong(b + OFF_BUDGET))
        .priority(in.getInt(b + OFF_PRIORITY_OR_THRESHOLD));
  }

  /**
   * Reads a response or control header at the reader index into {@code into}; allocates nothing.
   *
   * @throws FrameException for an unknown status code
   */
  public static ResponseMetadata readResponse(ByteBuf in, ResponseMetadata into) {
    int b = in.readerIndex();
    int code = in.getUnsignedByte(b + OFF_STATUS);
    Status status;
    try {
      status = Status.fromCode(code);
    } catch (IllegalArgumentException e) {
      throw new FrameException("unknown status code " + code);
    }
    return into.reset()
        .status(status)
        .sessionId(in.getLong(b + OFF_SESSION))
        .requestId(in.getLong(b + OFF_REQUEST))
        .credit(in.getInt(b + OFF_DEMAND_OR_DELTA), in.getInt(b + OFF_CREDIT_WINDOW),
            in.getLong(b + OFF_CREDIT_SEQ))
        .creditId(in.getLong(b + OFF_CREDIT_ID))
        .price(in.getLong(b + OFF_TOKENS_OR_PRICE))
        .threshold(in.getInt(b + OFF_PRIORITY_OR_THRESHOLD));
  }

  /** Writes a request header for a payload of {@code payloadLength} bytes. */
  public static void writeRequest(ByteBuf out, int type, RequestMetadata m, int payloadLength) {
    out.writeShort(MAGIC).writeByte(VERSION).writeByte(type).writeShort(m.flags())
        .writeByte(0).writeByte(0)
        .writeLong(m.sessionId()).writeLong(m.requestId())
        .writeInt(m.demand()).writeInt(m.interfaceId())
        .writeLong(m.creditId()).writeLong(m.tokens()).writeLong(m.budgetNanos())
        .writeInt(m.priority()).writeInt(payloadLength);
  }

  /** Writes a response or control header for a payload of {@code payloadLength} bytes. */
  public static void writeResponse(ByteBuf out, int type, ResponseMetadata m, int payloadLength) {
    out.writeShort(MAGIC).writeByte(VERSION).writeByte(type).writeShort(0)
        .writeByte(m.status().code()).writeByte(0)
        .writeLong(m.sessionId()).writeLong(m.requestId())
        .writeInt(m.creditDelta()).writeInt(m.creditSeq() == 0 ? 0 : m.creditWindow())
        .writeLong(m.creditId()).writeLong(m.price()).writeLong(m.creditSeq())
        .writeInt(m.threshold()).writeInt(payloadLength);
  }
}
