package io.spillway.spring.internal;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.function.IntConsumer;

/**
 * The response of a Spillway session's request, which tells the filter, once, just before its
 * headers can be sent: before a write to the body's stream or writer that could fill the
 * container's buffer (which commits the response), a flush or close of either, a flush of the
 * buffer, an error or a redirect. The filter then ends the request's permit and writes the credit
 * delta into the headers, which an HTTP/1.1 or HTTP/2 response sends before its body: over gRPC
 * the delta rides in trailers, after the body, and HTTP clients do not read trailers.
 *
 * <p>Asking for the stream or the writer does not tell: a handler that writes into the buffer and
 * then throws has its buffered body replaced by the container's error answer, so its permit ends
 * as the failure it is, when the chain returns, as a plain client's does. The writer's characters
 * are counted at {@value #MAX_BYTES_PER_CHAR} bytes each, the most any charset a response uses
 * takes, so the tell comes before the buffer can fill, never after.
 *
 * <p>Confined to the request's thread or threads, as the response is.
 */
final class CreditCarryingResponse extends HttpServletResponseWrapper {

  /** The most bytes a character of the writer's may encode to (UTF-8 takes 3, UTF-32 4). */
  static final int MAX_BYTES_PER_CHAR = 4;

  private final IntConsumer beforeCommit;
  private boolean told;
  /** The buffer's size as the body was asked for: a body this long could commit the response. */
  private long room;
  /** Bytes written so far (characters counted at their most). */
  private long written;
  /** The declared {@code Content-Length}, whose last byte commits the response; -1 if none. */
  private long contentLength = -1;
  private ServletOutputStream stream;
  private PrintWriter writer;

  /** @param beforeCommit given the status the response is about to be committed with */
  CreditCarryingResponse(HttpServletResponse response, IntConsumer beforeCommit) {
    super(response);
    this.beforeCommit = beforeCommit;
  }

  private void tell(int status) {
    if (!told) {
      told = true;
      beforeCommit.accept(status);
    }
  }

  /** Tells before {@code bytes} more could fill the buffer or complete the declared length. */
  private void writing(long bytes) {
    if (!told) {
      written += bytes;
      if (written >= room || contentLength >= 0 && written >= contentLength) {
        tell(getStatus());
      }
    }
  }

  @Override
  public void setContentLength(int len) {
    contentLength = len;
    super.setContentLength(len);
  }

  @Override
  public void setContentLengthLong(long len) {
    contentLength = len;
    super.setContentLengthLong(len);
  }

  @Override
  public void setHeader(String name, String value) {
    declared(name, value);
    super.setHeader(name, value);
  }

  @Override
  public void addHeader(String name, String value) {
    declared(name, value);
    super.addHeader(name, value);
  }

  @Override
  public void setIntHeader(String name, int value) {
    declared(name, Integer.toString(value));
    super.setIntHeader(name, value);
  }

  @Override
  public void addIntHeader(String name, int value) {
    declared(name, Integer.toString(value));
    super.addIntHeader(name, value);
  }

  @Override
  public void resetBuffer() {
    super.resetBuffer(); // throws if committed
    written = 0;
  }

  @Override
  public void reset() {
    super.reset(); // throws if committed
    written = 0;
    contentLength = -1;
  }

  private void declared(String name, String value) {
    if ("Content-Length".equalsIgnoreCase(name)) {
      try {
        contentLength = value == null ? -1 : Long.parseLong(value.trim());
      } catch (NumberFormatException e) {
        contentLength = -1;
      }
    }
  }

  private void startBody() {
    if (stream == null && writer == null) {
      room = Math.max(0, getBufferSize());
    }
  }

  @Override
  public ServletOutputStream getOutputStream() throws IOException {
    if (stream == null) {
      ServletOutputStream out = super.getOutputStream(); // throws if the writer was taken
      startBody();
      stream = new Stream(out);
    }
    return stream;
  }

  @Override
  public PrintWriter getWriter() throws IOException {
    if (writer == null) {
      PrintWriter out = super.getWriter(); // throws if the stream was taken
      startBody();
      writer = new Writer(out);
    }
    return writer;
  }

  @Override
  public void flushBuffer() throws IOException {
    tell(getStatus());
    super.flushBuffer();
  }

  @Override
  public void sendError(int sc) throws IOException {
    tell(sc);
    super.sendError(sc);
  }

  @Override
  public void sendError(int sc, String msg) throws IOException {
    tell(sc);
    super.sendError(sc, msg);
  }

  @Override
  public void sendRedirect(String location) throws IOException {
    tell(SC_FOUND);
    super.sendRedirect(location);
  }

  // The wrapper passes each of the servlet API's redirects straight to the response it wraps, not
  // through the others: every one of them commits the response, so every one tells.
  @Override
  public void sendRedirect(String location, int sc) throws IOException {
    tell(sc);
    super.sendRedirect(location, sc);
  }

  @Override
  public void sendRedirect(String location, boolean clearBuffer) throws IOException {
    tell(SC_FOUND);
    super.sendRedirect(location, clearBuffer);
  }

  @Override
  public void sendRedirect(String location, int sc, boolean clearBuffer) throws IOException {
    tell(sc);
    super.sendRedirect(location, sc, clearBuffer);
  }

  /** The body's stream: tells before a write that could fill the buffer, and on flush or close. */
  private final class Stream extends ServletOutputStream {
    private final ServletOutputStream out;

    Stream(ServletOutputStream out) {
      this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
      writing(1);
      out.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      writing(len);
      out.write(b, off, len);
    }

    @Override
    public void flush() throws IOException {
      tell(getStatus());
      out.flush();
    }

    @Override
    public void close() throws IOException {
      tell(getStatus());
      out.close();
    }

    @Override
    public boolean isReady() {
      return out.isReady();
    }

    @Override
    public void setWriteListener(jakarta.servlet.WriteListener listener) {
      out.setWriteListener(listener);
    }
  }

  /**
   * The body's writer: tells before a write that could fill the buffer, and on flush or close.
   * Every print and println of a {@link PrintWriter} comes down to the three writes overridden.
   */
  private final class Writer extends PrintWriter {
    private final PrintWriter out;

    Writer(PrintWriter out) {
      super(out);
      this.out = out;
    }

    @Override
    public void write(int c) {
      writing(MAX_BYTES_PER_CHAR);
      out.write(c);
    }

    @Override
    public void write(char[] buf, int off, int len) {
      writing((long) len * MAX_BYTES_PER_CHAR);
      out.write(buf, off, len);
    }

    @Override
    public void write(String str, int off, int len) {
      writing((long) len * MAX_BYTES_PER_CHAR);
      out.write(str, off, len);
    }

    @Override
    public void println() {
      writing(2 * MAX_BYTES_PER_CHAR); // the line separator, which PrintWriter writes past us
      super.println();
    }

    @Override
    public void flush() {
      tell(getStatus());
      out.flush();
    }

    @Override
    public void close() {
      tell(getStatus());
      out.close();
    }

    @Override
    public boolean checkError() {
      return out.checkError();
    }
  }
}
