package io.spillway.spring.internal;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.function.IntConsumer;

/**
 * The response of a Spillway session's request, which tells the filter, once, just before its
 * headers can be sent: when the handler asks for the body's stream or writer (the body is being
 * written, so the handler's work is done), flushes, or sends an error or a redirect. The filter
 * then ends the request's permit and writes the credit delta into the headers, which an HTTP/1.1
 * or HTTP/2 response sends before its body: over gRPC the delta rides in trailers, after the
 * body, and HTTP clients do not read trailers.
 *
 * <p>Confined to the request's thread or threads, as the response is.
 */
final class CreditCarryingResponse extends HttpServletResponseWrapper {

  private final IntConsumer beforeCommit;
  private boolean told;

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

  @Override
  public ServletOutputStream getOutputStream() throws IOException {
    tell(getStatus());
    return super.getOutputStream();
  }

  @Override
  public PrintWriter getWriter() throws IOException {
    tell(getStatus());
    return super.getWriter();
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

  @Override
  public void sendRedirect(String location, int sc, boolean clearBuffer) throws IOException {
    tell(sc);
    super.sendRedirect(location, sc, clearBuffer);
  }
}
