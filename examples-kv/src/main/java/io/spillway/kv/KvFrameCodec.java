package io.spillway.kv;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * The KV operations as payloads of Spillway's native frame (the frame's 64-byte header carries
 * the overload metadata; see {@code io.spillway.transport.internal.Frame}). Big-endian, as the
 * header.
 *
 * <pre>
 * request
 *  offset size field
 *   0     1   op: 1 GET, 2 SET, 3 DELETE
 *   1     1   key length k, 1..250 (memcached's KEY_MAX_LENGTH)
 *   2     k   key bytes
 *   SET only:
 *   2+k   4   flags (an unsigned 32-bit value, as memcached's)
 *   6+k   4   exptime, signed seconds (memcached's: 0 never, up to 30 days relative, else Unix time)
 *  10+k   …   the value: the rest of the payload, at most 1 MiB
 *
 * response (the frame's status OK; a fast reject is a header-only frame with a rejection status)
 *   0     1   code: 0 OK, 1 NOT_FOUND, 2 CLIENT_ERROR, 3 SERVER_ERROR
 *   OK to GET:       1..4 flags, 5.. the value
 *   OK to SET:       nothing more (stored)
 *   OK to DELETE:    nothing more (deleted); NOT_FOUND: no such key
 *   CLIENT_ERROR, SERVER_ERROR: 1.. an ASCII message
 * </pre>
 *
 * <p>A request the server cannot parse gets {@code CLIENT_ERROR} and a message saying what is
 * wrong, never a closed connection: the frame around it is intact, so the next request on the
 * connection is unaffected. {@code SERVER_ERROR} is memcached's: a value too large for a page, or
 * no memory after eviction.
 *
 * <p>The client encodes into one array per request (the frame client sends {@code byte[]}); the
 * server decodes straight from the frame's payload buffer, copying only the key (the store keys
 * its items by {@code byte[]}) and the value into its slab chunk.
 *
 * <p>Stateless and thread-safe.
 */
final class KvFrameCodec {

  static final int OP_GET = 1;
  static final int OP_SET = 2;
  static final int OP_DELETE = 3;

  static final int OK = 0;
  static final int NOT_FOUND = 1;
  static final int CLIENT_ERROR = 2;
  static final int SERVER_ERROR = 3;

  /** Bytes of a SET after its key: flags and exptime. */
  static final int SET_FIELDS = 8;

  private KvFrameCodec() { }

  /** The encoded size of a request with this key and a value of this length (SET only). */
  static int requestSize(int op, byte[] key, int valueLength) {
    return 2 + key.length + (op == OP_SET ? SET_FIELDS + valueLength : 0);
  }

  /**
   * Encodes a request ({@code value} is used by SET only).
   *
   * @throws IllegalArgumentException if the key is empty or over 250 bytes
   */
  static byte[] encode(int op, byte[] key, int flags, int exptime, byte[] value) {
    checkKey(key);
    byte[] out = new byte[requestSize(op, key, value == null ? 0 : value.length)];
    out[0] = (byte) op;
    out[1] = (byte) key.length;
    System.arraycopy(key, 0, out, 2, key.length);
    if (op == OP_SET) {
      int at = 2 + key.length;
      putInt(out, at, flags);
      putInt(out, at + 4, exptime);
      System.arraycopy(value, 0, out, at + SET_FIELDS, value.length);
    }
    return out;
  }

  static void checkKey(byte[] key) {
    if (key.length == 0 || key.length > KvStore.MAX_KEY_LENGTH) {
      throw new IllegalArgumentException("a key is 1 to " + KvStore.MAX_KEY_LENGTH + " bytes: "
          + key.length);
    }
  }

  private static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  static int getInt(byte[] b, int at) {
    return (b[at] & 0xFF) << 24 | (b[at + 1] & 0xFF) << 16 | (b[at + 2] & 0xFF) << 8 | b[at + 3] & 0xFF;
  }

  /** Writes an error response with {@code message}. */
  static ByteBuf error(ByteBuf out, int code, String message) {
    out.writeByte(code);
    out.writeCharSequence(message, StandardCharsets.US_ASCII);
    return out;
  }

  /** The message of an error response. */
  static String message(byte[] response) {
    return new String(response, 1, response.length - 1, StandardCharsets.US_ASCII);
  }
}
