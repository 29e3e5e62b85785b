package io.spillway.sim;

import io.spillway.api.CallGraphGate;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.ControlChannel;
import io.spillway.api.InheritedPriority;
import io.spillway.api.InterfaceCall;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.api.TimestampedQueue;
import io.spillway.sim.EventQueue.Event;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BiFunction;

/**
 * One simulated run of a multi-service call graph ({@link CallGraph}, rajomon-nsdi25 §2.1, §5.1):
 * every service is a server with its own gate, clients call the root of each interface, and each
 * node fans out to its callees in parallel. Virtual time; deterministic for a seed.
 *
 * <p>The model, per service (as {@link Simulation} models its one server):
 * <ul>
 *   <li>{@code workers} cores take work in this order: messages to send (each costs {@code
 *       cost_tx}: requests to callees, responses, rejects, credits, demand reports), received
 *       messages to parse (each {@code cost_rx}: requests, callees' responses, credits), then
 *       admitted requests to compute (the node's sampled compute time).
 *   <li>The server gate decides on a request when its header is parsed; its queueing-delay signal
 *       is this service's receive queue plus run queue ({@code now − oldest}, {@link
 *       TimestampedQueue}). A reject is answered at once.
 *   <li>After computing, a node sends one sub-request per callee and holds no core while it
 *       waits (asynchronous RPC, like Rajomon's goroutines). When every callee has answered it
 *       sends its response; if any callee rejected (or failed), the response is a failure and
 *       its permit completes {@link Outcome#FAILED}. Every permit, admitted or not, is completed
 *       exactly once, and every call is answered exactly once.
 *   <li>Sub-requests carry the inbound request's tokens (Rajomon §3.2) and priority (DAGOR) and
 *       its request id (one id per end-to-end request, like a trace id), and the interface id of
 *       the graph interface they serve: a service has one method per interface through it.
 *   <li>Every callee response or reject is reported to the caller's gate if it is a {@link
 *       CallGraphGate}, with {@code calleeKey = callee service index × interfaces + interface}.
 *   <li>Where the placement ({@link GraphScheme}) says so, a caller holds one client session per
 *       callee service and sub-requests wait in its {@link ClientGate}; one refused or expired
 *       there fails its parent as a reject would (shed at the caller's hop).
 *   <li>Every message crosses the network in RTT/2 (one hop).
 * </ul>
 *
 * <p>End clients: one open-loop Poisson process per interface at demand × that interface's
 * capacity, each arrival going to a uniformly chosen client, which offers it to its session with
 * the root service. Compute times of all the request's nodes are drawn when it is issued, so every
 * scheme sees the same request with the same work. In closed-loop mode one interface is driven by
 * a fixed number of clients each re-issuing on completion (how capacity is measured).
 *
 * <p>Not thread-safe; one run per instance, on one thread.
 */
final class GraphSimulation {

  private static final int ARRIVAL = 0;
  private static final int STEP = 1;
  private static final int TO_SERVER = 2;
  private static final int CORE_DONE = 3;
  private static final int TO_CLIENT = 4;
  private static final int WAKEUP = 5;
  private static final int TASK = 6;

  /** {@link Call#shedNode}: not shed. Node indices are non-negative. */
  static final int NOT_SHED = -1;
  /** {@link Call#shedNode}: refused or expired in the end client's queue. */
  static final int SHED_AT_CLIENT = -2;

  /**
   * The demand: open loop (per interface, steps as multiples of its capacity), or closed loop on
   * one interface.
   */
  record Load(List<List<Scenario.DemandStep>> steps, double[] capacityRps, int closedInterface,
      int outstanding) {

    static Load open(List<List<Scenario.DemandStep>> steps, double[] capacityRps) {
      return new Load(steps, capacityRps, -1, 0);
    }

    static Load closed(int iface, int outstanding) {
      return new Load(List.of(), new double[0], iface, outstanding);
    }

    boolean isClosed() {
      return closedInterface >= 0;
    }
  }

  private final Load load;
  private final CallGraph.Stall stall;
  private final long origin;
  private final long halfRtt;
  private final long rxCost;
  private final long txCost;
  private final long endNanos;
  private final GraphRecorder recorder;
  private final Plan[] plans;
  private final Server[] servers;
  private final Client[] clients;

  private final SplittableRandom[] arrivalRandom;
  private final SplittableRandom computeRandom;
  private final SplittableRandom clientRandom;
  private final EventQueue events = new EventQueue();
  private long now;
  private final double[] ratePerNano;
  private final int[] stepIndex;
  private final Event[] pendingArrival;
  private long nextOriginId = 1;

  private final Server[] dirty;
  private int dirtyCount;

  private long originsIssued;
  private long originsEnded;
  private long permitsIssued;
  private long permitsCompleted;

  private final RequestMetadata header = new RequestMetadata();
  private final RequestMetadata outgoing = new RequestMetadata();

  GraphSimulation(Scenario scenario, CallGraph graph, GraphScheme scheme, Load load,
      long endNanos, GraphRecorder recorder, long seed) {
    this(scenario, graph, scheme, load, endNanos, recorder, seed, (service, gate) -> gate);
  }

  /**
   * As above; {@code gateDecorator} wraps each service's server gate (tests: a leak checker, a
   * gate that rejects). A wrapped gate is told about callee responses only if the wrapper itself
   * is a {@link CallGraphGate}.
   */
  GraphSimulation(Scenario scenario, CallGraph graph, GraphScheme scheme, Load load,
      long endNanos, GraphRecorder recorder, long seed,
      BiFunction<CallGraph.Service, ServerGate, ServerGate> gateDecorator) {
    this.load = load;
    this.stall = graph.stall();
    this.origin = scenario.timeOriginNanos();
    this.halfRtt = scenario.rttNanos() / 2;
    this.rxCost = scenario.rxCostNanos();
    this.txCost = scenario.txCostNanos();
    this.endNanos = endNanos;
    this.recorder = recorder;

    List<CallGraph.Interface> ifaces = graph.interfaces();
    int nIf = ifaces.size();
    this.plans = new Plan[nIf];
    long sessionSlo = 1;
    for (CallGraph.Interface i : ifaces) {
      plans[i.index()] = new Plan(i, nIf);
      sessionSlo = Math.max(sessionSlo, i.sloNanos());
    }

    SplittableRandom root = new SplittableRandom(seed);
    this.computeRandom = root.split();
    this.clientRandom = root.split();
    this.arrivalRandom = new SplittableRandom[nIf];
    for (int i = 0; i < nIf; i++) {
      arrivalRandom[i] = root.split();
    }
    this.ratePerNano = new double[nIf];
    this.stepIndex = new int[nIf];
    this.pendingArrival = new Event[nIf];

    List<CallGraph.Service> services = graph.services();
    this.servers = new Server[services.size()];
    this.dirty = new Server[services.size()];
    boolean[] isRoot = new boolean[services.size()];
    for (Plan p : plans) {
      isRoot[p.service[0]] = true;
    }
    Ticker ticker = () -> origin + now;
    Scheduler scheduler = events.scheduler(TASK, () -> now);
    for (CallGraph.Service s : services) {
      Server server = new Server(s, isRoot[s.index()] ? scheme.frontEnd() : scheme.inner(),
          services.size());
      servers[s.index()] = server;
      server.sessionsIn = scheme.callerSessions() || server.scheme.issuesCredits();
      ControlChannel control = CreditMessages.channel((sessionId, message) -> sendCredit(server, sessionId, message));
      ServerGate gate = gateDecorator.apply(s, server.scheme.newServerGate(new ServerEnvironment(
          ticker, scheduler, QueueDelaySignal.sum(server.receive, server.run), control,
          OverloadMetrics.NONE, s.workers())));
      server.gate = gate;
      server.graphGate = gate instanceof CallGraphGate g ? g : null;
    }

    int n = load.isClosed() ? load.outstanding() : scenario.clients();
    this.clients = new Client[n];
    for (int c = 0; c < n; c++) {
      long sessionId = c + 1;
      Client client = new Client(servers.length);
      for (Plan p : plans) {
        Server target = servers[p.service[0]];
        if (client.sessionTo[target.index] == null) {
          client.sessionTo[target.index] = new Session(sessionId, null, target,
              target.scheme.newClientGate(new ClientEnvironment(sessionId, sessionSlo,
                  OverloadMetrics.NONE)));
        }
      }
      clients[c] = client;
    }
    // One session per (caller service, callee service) pair that needs one, in plan order.
    for (Plan p : plans) {
      for (int node = 0; node < p.size(); node++) {
        Server caller = servers[p.service[node]];
        for (int child : p.children[node]) {
          Server callee = servers[p.service[child]];
          if (callee.sessionsIn && caller.sessionTo[callee.index] == null) {
            long sessionId = serviceSessionId(caller);
            caller.sessionTo[callee.index] = new Session(sessionId, caller, callee,
                callee.scheme.newClientGate(new ClientEnvironment(sessionId, sessionSlo,
                    OverloadMetrics.NONE)));
          }
        }
      }
    }
  }

  /** Runs to the end and returns the recorder. */
  GraphRecorder run() {
    for (Server s : servers) {
      s.gate.start();
    }
    if (load.isClosed()) {
      for (Client c : clients) {
        issue(load.closedInterface(), c);
      }
      flushDirty();
    } else {
      for (int i = 0; i < plans.length; i++) {
        List<Scenario.DemandStep> steps = load.steps().get(i);
        for (int k = 1; k < steps.size(); k++) {
          schedule(steps.get(k).startNanos(), STEP, null).aux = i;
        }
        applyStep(i, 0);
        scheduleNextArrival(i);
      }
    }
    for (Event e = events.next(endNanos); e != null; e = events.next(endNanos)) {
      now = e.time;
      dispatch(e);
      flushDirty();
    }
    for (Server s : servers) {
      s.gate.close();
    }
    return recorder;
  }

  /** End-to-end requests issued and not yet ended (served, rejected or shed). */
  long requestsInFlight() {
    return originsIssued - originsEnded;
  }

  /** Permits handed out by every server gate and not yet completed. */
  long permitsOpen() {
    return permitsIssued - permitsCompleted;
  }

  /** Permits handed out by every server gate (admitted or not). */
  long permitsIssued() {
    return permitsIssued;
  }

  private void dispatch(Event e) {
    switch (e.type) {
      case ARRIVAL -> {
        issue(e.aux, clients[clientRandom.nextInt(clients.length)]);
        scheduleNextArrival(e.aux);
      }
      case STEP -> {
        applyStep(e.aux, stepIndex[e.aux] + 1);
        // Exponential gaps are memoryless: redrawing the next arrival at the new rate is exact.
        if (pendingArrival[e.aux] != null) {
          pendingArrival[e.aux].cancelled = true;
        }
        scheduleNextArrival(e.aux);
      }
      case TO_SERVER -> {
        Server server = (Server) e.target;
        server.receive.offer((Message) e.payload, origin + now);
        kick(server);
      }
      case CORE_DONE -> coreDone((Server) e.target, (Message) e.payload);
      case TO_CLIENT -> clientReceive((Message) e.payload);
      case WAKEUP -> wakeup((Session) e.payload, e.time);
      case TASK -> ((Runnable) e.payload).run();
      default -> throw new IllegalStateException("unknown event " + e.type);
    }
  }

  // ---------------------------------------------------------------- end clients

  private void issue(int iface, Client client) {
    Plan plan = plans[iface];
    long[] compute = new long[plan.size()];
    for (int i = 0; i < compute.length; i++) {
      compute[i] = plan.compute[i].sample(computeRandom);
    }
    Origin o = new Origin(nextOriginId++, plan, client, now, compute);
    originsIssued++;
    recorder.at(now).interfaces[iface].offered++;
    Server root = servers[plan.service[0]];
    Session session = client.sessionTo[root.index];
    Call call = new Call(o, 0, null, root, session, session.id);
    if (!session.gate.offer(call, origin + now)) {
      endRequest(o, SHED_AT_CLIENT);
      return;
    }
    drain(session);
  }

  private void clientReceive(Message m) {
    Session session = m.session;
    if (m.kind == Message.CREDIT) {
      session.gate.onControl(m.response, origin + now);
    } else {
      Call call = m.call;
      m.response.interfaceId(call.interfaceId());
      session.gate.onResponse(m.response, origin + call.sentAt, origin + now);
      endRequest(call.origin, m.response.status() == Status.OK ? NOT_SHED : call.shedNode);
    }
    drain(session);
  }

  private void endRequest(Origin o, int shedNode) {
    if (o.ended) {
      throw new IllegalStateException("request " + o.id + " ended twice");
    }
    o.ended = true;
    originsEnded++;
    Plan plan = o.plan;
    GraphRecorder.InterfaceTally t = recorder.at(now).interfaces[plan.iface];
    t.computeNanos += o.computeSpent;
    if (shedNode == NOT_SHED) {
      long latency = now - o.issuedAt;
      t.completed++;
      if (latency <= plan.sloNanos) {
        t.good++;
      }
      t.latency.recordValue(Math.max(1, latency));
    } else {
      t.wastedNanos += o.computeSpent;
      if (shedNode == SHED_AT_CLIENT) {
        t.shedClient++;
      } else if (shedNode == 0) {
        t.shedFront++;
      } else {
        t.shedInner++;
      }
    }
    if (load.isClosed()) {
      issue(plan.iface, o.client);
    }
  }

  private void applyStep(int iface, int index) {
    stepIndex[iface] = index;
    Scenario.DemandStep step = load.steps().get(iface).get(index);
    ratePerNano[iface] = step.level() * load.capacityRps()[iface] / 1e9;
    recorder.demandChanged(iface, now, step.level());
  }

  private void scheduleNextArrival(int iface) {
    pendingArrival[iface] = null;
    if (ratePerNano[iface] <= 0) {
      return; // an idle step: the next step schedules the next arrival
    }
    double gap = -Math.log(1.0 - arrivalRandom[iface].nextDouble()) / ratePerNano[iface];
    Event e = schedule(now + Math.max(1, Math.round(gap)), ARRIVAL, null);
    e.aux = iface;
    pendingArrival[iface] = e;
  }

  // ---------------------------------------------------------------- sessions (client gates)

  /** Sends what the session's gate releases now, and its demand report, and arms its timer. */
  private void drain(Session session) {
    while (true) {
      outgoing.reset();
      Call call = session.gate.poll(origin + now, outgoing);
      if (call == null) {
        break;
      }
      call.demand = outgoing.demand();
      call.flags = outgoing.flags();
      call.creditId = outgoing.creditId();
      if (call.parent == null) {
        call.tokens = outgoing.tokens();
        call.priority = outgoing.priority();
        recorder.at(now).interfaces[call.interfaceId()].sent++;
      } // a sub-request keeps the tokens and priority it inherited
      Message m = new Message(Message.REQUEST);
      m.call = call;
      send(session, m, call);
    }
    int demand = session.gate.takeDemandReport();
    if (demand >= 0) {
      Message m = new Message(Message.DEMAND);
      m.session = session;
      m.demand = demand;
      send(session, m, null);
    }
    armWakeup(session);
  }

  /** An end client puts a message on the wire at once; a service queues it for a core. */
  private void send(Session session, Message m, Call call) {
    if (session.owner == null) {
      if (call != null) {
        call.sentAt = now;
      }
      schedule(now + halfRtt, TO_SERVER, m).target = session.target;
    } else {
      session.owner.send.add(m);
      kick(session.owner);
    }
  }

  private void armWakeup(Session session) {
    if (session.wakeup.arm(session.gate, origin, now)) {
      schedule(session.wakeup.at(), WAKEUP, session);
    }
  }

  private void wakeup(Session session, long time) {
    if (!session.wakeup.fire(time)) {
      return; // superseded by an earlier wakeup
    }
    List<Call> expired = new ArrayList<>();
    session.gate.expire(origin + now, expired::add);
    for (Call call : expired) { // after expire returns: shedding may re-enter the gate
      if (session.owner == null) {
        endRequest(call.origin, SHED_AT_CLIENT);
      } else {
        shedAtCaller(session.owner, call);
      }
    }
    drain(session);
  }

  // ---------------------------------------------------------------- services

  private void sendCredit(Server server, long sessionId, ResponseMetadata message) {
    Session session = sessionId <= clients.length ? clients[(int) sessionId - 1].sessionTo[server.index]
        : servers[(int) (sessionId - clients.length - 1)].sessionTo[server.index];
    if (session == null) {
      throw new IllegalStateException(server.name + " sent a credit to unknown session " + sessionId);
    }
    Message m = new Message(Message.CREDIT);
    m.session = session;
    m.response = message;
    server.send.add(m);
    kick(server);
  }

  private long serviceSessionId(Server caller) {
    return clients.length + 1L + caller.index;
  }

  private void kick(Server server) {
    if (!server.kicked) {
      server.kicked = true;
      dirty[dirtyCount++] = server;
    }
  }

  private void flushDirty() {
    for (int i = 0; i < dirtyCount; i++) {
      Server s = dirty[i];
      s.kicked = false;
      dirty[i] = null;
      startIdleCores(s);
    }
    dirtyCount = 0;
  }

  private void startIdleCores(Server server) {
    while (server.idle > 0) {
      Message out = server.send.poll();
      if (out != null) {
        out.phase = Message.SEND;
        busy(server, txCost, out);
        continue;
      }
      Message in = server.receive.poll();
      if (in != null) {
        in.phase = Message.PARSE;
        busy(server, rxCost, in);
        continue;
      }
      Call call = server.run.poll();
      if (call != null) {
        Message m = new Message(Message.REQUEST);
        m.call = call;
        m.phase = Message.EXECUTE;
        busy(server, call.origin.compute[call.node], m);
        continue;
      }
      break;
    }
  }

  private void busy(Server server, long nanos, Message m) {
    server.idle--;
    recorder.at(now).services[server.index].busyNanos += nanos;
    schedule(stalledEnd(now, now + nanos), CORE_DONE, m).target = server;
  }

  /** When work from {@code start} to {@code end} ends if the cores stop during the stall. */
  private long stalledEnd(long start, long end) {
    if (stall == null || start >= stall.endNanos() || end <= stall.startNanos()) {
      return end;
    }
    return start >= stall.startNanos() ? stall.endNanos() + (end - start) : end + stall.lengthNanos();
  }

  private void coreDone(Server server, Message m) {
    server.idle++;
    kick(server);
    switch (m.phase) {
      case Message.SEND -> deliver(m);
      case Message.EXECUTE -> computed(server, m.call);
      case Message.PARSE -> {
        switch (m.kind) {
          case Message.REQUEST -> admit(server, m.call);
          case Message.RESPONSE -> calleeAnswered(server, m.call, m.response);
          case Message.CREDIT -> {
            m.session.gate.onControl(m.response, origin + now);
            drain(m.session);
          }
          case Message.DEMAND -> server.gate.onDemand(m.session.id, m.demand, origin + now);
          default -> throw new IllegalStateException("unknown message " + m.kind);
        }
      }
      default -> throw new IllegalStateException("unknown phase " + m.phase);
    }
  }

  /** A message a core has sent crosses the network. */
  private void deliver(Message m) {
    switch (m.kind) {
      case Message.REQUEST -> {
        m.call.sentAt = now;
        schedule(now + halfRtt, TO_SERVER, m).target = m.call.server;
      }
      case Message.DEMAND -> schedule(now + halfRtt, TO_SERVER, m).target = m.session.target;
      case Message.RESPONSE -> {
        Call call = m.call;
        if (call.parent == null) {
          m.session = call.session;
          schedule(now + halfRtt, TO_CLIENT, m);
        } else {
          schedule(now + halfRtt, TO_SERVER, m).target = call.parent.server;
        }
      }
      case Message.CREDIT -> {
        if (m.session.owner == null) {
          schedule(now + halfRtt, TO_CLIENT, m);
        } else {
          schedule(now + halfRtt, TO_SERVER, m).target = m.session.owner;
        }
      }
      default -> throw new IllegalStateException("unknown message " + m.kind);
    }
  }

  private void admit(Server server, Call call) {
    GraphRecorder.ServiceTally st = recorder.at(now).services[server.index];
    st.received++;
    header.reset().sessionId(call.sessionId).requestId(call.origin.id).demand(call.demand)
        .flags(call.flags).priority(call.priority).creditId(call.creditId).tokens(call.tokens)
        .interfaceId(call.interfaceId());
    ServerPermit permit = server.gate.admit(header, origin + now);
    permitsIssued++;
    call.permit = permit;
    if (permit.isAdmitted()) {
      server.run.offer(call, origin + now);
      kick(server);
    } else {
      st.dropped++;
      call.shedNode = call.node;
      ResponseMetadata response = new ResponseMetadata();
      complete(call, Outcome.DROPPED, response);
      respond(server, call, response);
    }
  }

  /** The node's compute is done: answer, or fan out to every callee in parallel. */
  private void computed(Server server, Call call) {
    Origin o = call.origin;
    o.computeSpent += o.compute[call.node];
    Plan plan = o.plan;
    int[] callees = plan.children[call.node];
    if (callees.length == 0) {
      finish(server, call);
      return;
    }
    call.pending = callees.length;
    for (int child : callees) {
      Server callee = servers[plan.service[child]];
      Session session = server.sessionTo[callee.index];
      Call sub = new Call(o, child, call, callee, session,
          session != null ? session.id : serviceSessionId(server));
      sub.tokens = call.tokens; // Rajomon §3.2: sub-requests inherit the request's tokens
      sub.priority = call.priority; // DAGOR: and its priority
      if (session == null) {
        Message m = new Message(Message.REQUEST);
        m.call = sub;
        server.send.add(m);
        kick(server);
      } else if (session.gate.offer(sub, origin + now)) {
        drain(session);
      } else {
        shedAtCaller(server, sub);
      }
    }
  }

  /** A sub-request the caller's own session refused or expired: it fails its parent at once. */
  private void shedAtCaller(Server caller, Call sub) {
    recorder.at(now).services[caller.index].shedOutbound++;
    sub.shedNode = sub.parent.node;
    calleeDone(caller, sub.parent, sub.shedNode);
  }

  private void calleeAnswered(Server server, Call sub, ResponseMetadata response) {
    Call parent = sub.parent;
    response.interfaceId(sub.interfaceId());
    if (sub.session != null) {
      sub.session.gate.onResponse(response, origin + sub.sentAt, origin + now);
    }
    if (server.graphGate != null) {
      server.graphGate.onDownstreamResponse(parent.interfaceId(),
          parent.origin.plan.calleeKey[sub.node], response, origin + now);
    }
    calleeDone(server, parent, response.status() == Status.OK ? NOT_SHED : sub.shedNode);
    if (sub.session != null) {
      drain(sub.session);
    }
  }

  private void calleeDone(Server server, Call parent, int shedNode) {
    if (shedNode != NOT_SHED && parent.shedNode == NOT_SHED) {
      parent.shedNode = shedNode; // the first failure is the one reported
    }
    if (--parent.pending == 0) {
      finish(server, parent);
    }
  }

  private void finish(Server server, Call call) {
    ResponseMetadata response = new ResponseMetadata();
    complete(call, call.shedNode == NOT_SHED ? Outcome.SUCCESS : Outcome.FAILED, response);
    respond(server, call, response);
  }

  private void complete(Call call, Outcome outcome, ResponseMetadata response) {
    call.permit.complete(outcome, origin + now, response);
    permitsCompleted++;
  }

  private void respond(Server server, Call call, ResponseMetadata response) {
    if (call.answered) {
      throw new IllegalStateException("call answered twice at " + server.name);
    }
    call.answered = true;
    Message m = new Message(Message.RESPONSE);
    m.call = call;
    m.response = response;
    server.send.add(m);
    kick(server);
  }

  // ---------------------------------------------------------------- events

  private Event schedule(long time, int type, Object payload) {
    return events.schedule(time, type, payload);
  }

  // ---------------------------------------------------------------- model

  /** An interface's tree flattened: node 0 is the root, arrays are indexed by node. */
  static final class Plan {
    final int iface;
    final long sloNanos;
    final int[] service;
    final ServiceTime[] compute;
    final int[][] children;
    final int[] calleeKey;

    Plan(CallGraph.Interface i, int interfaceCount) {
      this.iface = i.index();
      this.sloNanos = i.sloNanos();
      List<CallGraph.Node> nodes = i.nodes();
      Map<CallGraph.Node, Integer> index = new IdentityHashMap<>();
      for (CallGraph.Node n : nodes) {
        index.put(n, index.size());
      }
      int size = nodes.size();
      this.service = new int[size];
      this.compute = new ServiceTime[size];
      this.children = new int[size][];
      this.calleeKey = new int[size];
      for (int k = 0; k < size; k++) {
        CallGraph.Node n = nodes.get(k);
        service[k] = n.service().index();
        compute[k] = n.compute();
        children[k] = n.callees().stream().mapToInt(index::get).toArray();
        calleeKey[k] = service[k] * interfaceCount + iface;
      }
    }

    int size() {
      return service.length;
    }
  }

  private static final class Server {
    final int index;
    final String name;
    final OverloadScheme scheme;
    final TimestampedQueue<Message> receive = new TimestampedQueue<>(256);
    final TimestampedQueue<Call> run = new TimestampedQueue<>(256);
    final ArrayDeque<Message> send = new ArrayDeque<>();
    /** This service's sessions to its callees, by callee service index (null: call directly). */
    final Session[] sessionTo;
    int idle;
    boolean sessionsIn;
    boolean kicked;
    ServerGate gate;
    CallGraphGate graphGate;

    Server(CallGraph.Service service, OverloadScheme scheme, int serviceCount) {
      this.index = service.index();
      this.name = service.name();
      this.scheme = scheme;
      this.idle = service.workers();
      this.sessionTo = new Session[serviceCount];
    }
  }

  private static final class Client {
    /** Sessions with the roots this client calls, by service index. */
    final Session[] sessionTo;

    Client(int serviceCount) {
      this.sessionTo = new Session[serviceCount];
    }
  }

  /** A client session: an end client's, or a caller service's, with one target service. */
  private static final class Session {
    final long id;
    /** The service that owns it, {@code null} for an end client. */
    final Server owner;
    final Server target;
    final ClientGate<Call> gate;
    final WakeupTimer wakeup = new WakeupTimer();

    Session(long id, Server owner, Server target, ClientGate<Call> gate) {
      this.id = id;
      this.owner = owner;
      this.target = target;
      this.gate = gate;
    }
  }

  /** One end-to-end request. */
  private static final class Origin {
    final long id;
    final Plan plan;
    final Client client;
    final long issuedAt;
    final long[] compute;
    long computeSpent;
    boolean ended;

    Origin(long id, Plan plan, Client client, long issuedAt, long[] compute) {
      this.id = id;
      this.plan = plan;
      this.client = client;
      this.issuedAt = issuedAt;
      this.compute = compute;
    }
  }

  /** One request at one hop: a node of the interface's tree, for one end-to-end request. */
  static final class Call implements InterfaceCall, InheritedPriority {
    final Origin origin;
    final int node;
    final Call parent;
    final Server server;
    final Session session;
    final long sessionId;
    long tokens;
    int priority;
    int flags;
    int demand;
    long creditId;
    long sentAt;
    ServerPermit permit;
    int pending;
    int shedNode = NOT_SHED;
    boolean answered;

    Call(Origin origin, int node, Call parent, Server server, Session session, long sessionId) {
      this.origin = origin;
      this.node = node;
      this.parent = parent;
      this.server = server;
      this.session = session;
      this.sessionId = sessionId;
    }

    @Override
    public int interfaceId() {
      return origin.plan.iface;
    }

    /** A sub-request's priority is its request's (DAGOR); a front-end request has none yet. */
    @Override
    public int inheritedPriority() {
      return parent == null ? 0 : priority;
    }
  }

  private static final class Message {
    static final int REQUEST = 0;
    static final int RESPONSE = 1;
    static final int CREDIT = 2;
    static final int DEMAND = 3;
    static final int PARSE = 0;
    static final int EXECUTE = 1;
    static final int SEND = 2;

    final int kind;
    int phase = SEND;
    Call call;
    Session session;
    ResponseMetadata response;
    int demand;

    Message(int kind) {
      this.kind = kind;
    }
  }
}
