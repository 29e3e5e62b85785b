package io.spillway.harness.graph;

import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;
import io.spillway.harness.graph.proto.GraphGrpc;
import io.spillway.harness.graph.proto.GraphReply;
import io.spillway.harness.graph.proto.GraphRequest;
import io.spillway.sim.CallGraph;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The gRPC method of each interface at each service, all with {@code hotel.proto}'s messages.
 *
 * <ul>
 *   <li>Clients call an interface's root on {@code spillway.hotel.Graph/<Iface>} (first letter
 *       upper-cased): {@code Search} and {@code Reserve} are the generated descriptors, so ghz and
 *       other proto-driven clients can drive the front-end.
 *   <li>Inside the graph, a node calls a callee on {@code spillway.hotel.graph.<service>/<Iface>}:
 *       one gRPC service per microservice, as real applications have, so a caller can tell its
 *       callees' answers apart by method name (Rajomon keeps the latest price of each callee
 *       interface, rajomon-nsdi25 §3.4, and the gRPC adapter keys callees by full method name).
 * </ul>
 * The method name is the interface at every hop; a service takes part in an interface at most
 * once ({@link CallGraph}), so a service serves one method per interface it is in.
 */
final class GraphMethods {

  /** The package of the services inside the graph. */
  static final String INNER_PREFIX = "spillway.hotel.graph.";

  private GraphMethods() { }

  /** What clients call: each interface's method at its root, indexed by interface id. */
  static List<MethodDescriptor<GraphRequest, GraphReply>> frontEnd(CallGraph graph) {
    List<MethodDescriptor<GraphRequest, GraphReply>> methods = new ArrayList<>();
    for (CallGraph.Interface i : graph.interfaces()) {
      methods.add(frontEnd(i.name()));
    }
    return List.copyOf(methods);
  }

  /** The method the service of {@code node} serves for interface {@code iface}. */
  static MethodDescriptor<GraphRequest, GraphReply> at(CallGraph.Interface iface, CallGraph.Node node) {
    return node.service().equals(iface.root().service()) ? frontEnd(iface.name())
        : method(INNER_PREFIX + node.service().name(), methodName(iface.name()));
  }

  /** The front-end method of the interface called {@code iface}. */
  static MethodDescriptor<GraphRequest, GraphReply> frontEnd(String iface) {
    String name = methodName(iface);
    return switch (name) {
      case "Search" -> GraphGrpc.getSearchMethod();
      case "Reserve" -> GraphGrpc.getReserveMethod();
      default -> method(GraphGrpc.SERVICE_NAME, name);
    };
  }

  private static String methodName(String iface) {
    return iface.substring(0, 1).toUpperCase(Locale.ROOT) + iface.substring(1);
  }

  private static MethodDescriptor<GraphRequest, GraphReply> method(String service, String name) {
    return MethodDescriptor.<GraphRequest, GraphReply>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(service, name))
        .setRequestMarshaller(ProtoUtils.marshaller(GraphRequest.getDefaultInstance()))
        .setResponseMarshaller(ProtoUtils.marshaller(GraphReply.getDefaultInstance()))
        .build();
  }
}
