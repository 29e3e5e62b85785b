package io.spillway.spring;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;

/** HTTP/1.1 requests to a test application on loopback, from one shared client. Thread-safe. */
final class LocalHttp {

  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private LocalHttp() { }

  static URI uri(int port, String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(uri(port, path)).build());
  }

  static HttpResponse<String> send(HttpRequest request) throws IOException, InterruptedException {
    return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
  }

  static CompletableFuture<HttpResponse<String>> sendAsync(HttpRequest request) {
    return HTTP.sendAsync(request, HttpResponse.BodyHandlers.ofString());
  }

  static CompletableFuture<HttpResponse<String>> sendAsync(int port, String path) {
    return HTTP.sendAsync(HttpRequest.newBuilder(uri(port, path)).build(), HttpResponse.BodyHandlers.ofString());
  }
}
