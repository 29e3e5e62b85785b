package io.spillway.kv;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;

/** A blocking text-protocol connection for tests: writes raw bytes, reads replies by content. */
final class MemcacheConnection implements AutoCloseable {

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  MemcacheConnection(int port) throws IOException {
    socket = new Socket();
    socket.setTcpNoDelay(true);
    socket.setSoTimeout(20_000); // a missing reply fails the test instead of hanging it
    socket.connect(new InetSocketAddress("127.0.0.1", port), 20_000);
    in = socket.getInputStream();
    out = socket.getOutputStream();
  }

  static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }

  MemcacheConnection send(String s) throws IOException {
    return send(ascii(s));
  }

  MemcacheConnection send(byte[] b) throws IOException {
    out.write(b);
    out.flush();
    return this;
  }

  /** Reads exactly as many bytes as {@code expected} has and returns them as text. */
  String read(String expected) throws IOException {
    byte[] buf = in.readNBytes(ascii(expected).length);
    return new String(buf, StandardCharsets.ISO_8859_1);
  }

  /** Reads until {@code terminator} has been read (inclusive) or the peer closes. */
  String readThrough(String terminator) throws IOException {
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    String t = terminator;
    while (true) {
      int c;
      try {
        c = in.read();
      } catch (SocketException reset) {
        c = -1;
      }
      if (c < 0) {
        return got.toString(StandardCharsets.ISO_8859_1) + "<CLOSED>";
      }
      got.write(c);
      if (got.size() >= t.length() && got.toString(StandardCharsets.ISO_8859_1).endsWith(t)) {
        return got.toString(StandardCharsets.ISO_8859_1);
      }
    }
  }

  /** True once the peer has closed: the next read sees end of stream (or a reset). */
  boolean closedByPeer() throws IOException {
    try {
      return in.read() < 0;
    } catch (SocketException reset) {
      return true;
    }
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
