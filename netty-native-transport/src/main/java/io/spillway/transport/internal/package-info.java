/**
 * The native transport's implementation, not its API: the frame codec ({@link
 * io.spillway.transport.internal.Frame}) the server's and the client's pipelines read and write
 * with. The module exports this package to no module; users talk through {@code SpillwayServer}
 * and {@code SpillwayClient}, whose wire format may change with them.
 */
package io.spillway.transport.internal;
