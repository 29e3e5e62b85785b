/** Spillway's native frame over Netty: server pipeline, multi-session client, io_uring → epoll → NIO. */
module io.spillway.transport {
  requires transitive io.spillway.api;
  requires transitive io.spillway.threading;
  requires io.spillway.asqm;
  requires io.netty.common;
  requires io.netty.buffer;
  requires transitive io.netty.transport;
  requires io.netty.codec;
  requires io.netty.transport.classes.epoll;
  requires io.netty.transport.classes.io_uring;

  exports io.spillway.transport;
  // io.spillway.transport.internal, the frame codec, is exported to no module.
}
