package io.spillway.lucene;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.lucene.proto.Hit;
import io.spillway.lucene.proto.SearchGrpc;
import io.spillway.lucene.proto.SearchReply;
import io.spillway.lucene.proto.SearchRequest;
import java.io.UncheckedIOException;

/**
 * The gRPC face of a {@link SearchEngine} ({@code spillway.lucene.Search/Search}, {@code
 * lucene.proto}). A bad request is answered {@code INVALID_ARGUMENT} with the engine's message,
 * never a server error. A {@link io.spillway.api.BudgetExceededException} (a lock's queue, or
 * the search itself, would outlast the call's budget) is left to propagate: Spillway's server
 * interceptor turns it into a fast {@code RESOURCE_EXHAUSTED} ("spillway: rejected (budget)") with
 * a retry pushback, and counts the call as aborted.
 *
 * <p>Thread-safe.
 */
public final class SearchService extends SearchGrpc.SearchImplBase {

  private final SearchEngine engine;

  public SearchService(SearchEngine engine) {
    this.engine = engine;
  }

  @Override
  public void search(SearchRequest request, StreamObserver<SearchReply> responses) {
    SearchEngine.Result result;
    try {
      result = engine.search(request.getQuery(), request.getK());
    } catch (InvalidQueryException e) {
      responses.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (UncheckedIOException e) { // in-memory directories: a bug if it ever happens
      responses.onError(Status.INTERNAL.withDescription("index read failed: " + e.getMessage())
          .withCause(e).asRuntimeException());
      return;
    }
    SearchReply.Builder reply = SearchReply.newBuilder().setTotalHits(result.totalHits());
    for (SearchEngine.Hit h : result.hits()) {
      reply.addHits(Hit.newBuilder().setId(h.id()).setScore(h.score()).setTitle(h.title()));
    }
    responses.onNext(reply.build());
    responses.onCompleted();
  }
}
