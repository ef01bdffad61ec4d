import RelayLoop
import RelayConfiguration
import RelayRedis

/// A Redis Cluster command client on hiredis (Redis Cluster specification): one non-blocking
/// `RedisConnection` per primary, on one worker's loop. Each command goes to the primary
/// serving its key's hash slot (`ClusterRouting`, `ClusterSlotMap`); `MOVED` updates the
/// slot and resends, `ASK` resends once to the importing node after `ASKING`; a command
/// redirected again (the nodes disagree for a moment while a migration's `SETSLOT NODE`
/// reaches them one by one, and redirect to each other), `TRYAGAIN` / `CLUSTERDOWN` and
/// a slot whose primary is unreachable are retried with backoff within
/// `RELAY_REDIS_OUTAGE_GRACE` (`ClusterRetryPolicy`), then answered `DISCONNECTED …`. The slot map is read with `CLUSTER SLOTS` at start, after a `MOVED`,
/// after a lost connection and while slots are uncovered (`TopologyRefresh`).
///
/// Commands of one slot travel on one connection, so pipelined appends of one stream
/// stay in order; redirected replies arrive in order and are resent in that order, and
/// commands waiting for a retry wait in one queue, each due no earlier than the one
/// before it, so they are resent in the order they failed.
/// `isConnected` is `true` while every slot has a connected primary. Loop thread only.
public final class ClusterClient: RedisCommandChannel {
    public var onConnect: (() -> Void)?
    public var onDisconnect: ((String) -> Void)?
    public var onLatency: ((Double) -> Void)?
    /// Called after each slot-map refresh with the primaries and whether each is
    /// connected (`/metrics` per-node health).
    public var onTopology: (([(node: String, connected: Bool)]) -> Void)?
    /// Called after the slot map changed (a refresh or a `MOVED`); `ShardedPubSub`
    /// moves its channels to their slots' new primaries.
    public var onSlotMapChanged: (() -> Void)?

    public private(set) var isConnected = false
    /// Redirects and retries so far (`/metrics`).
    public struct Counters: Sendable, Equatable {
        /// `MOVED` replies followed.
        public var moved = 0
        /// `ASK` replies followed.
        public var ask = 0
        /// Commands retried after a backoff: `TRYAGAIN`, `CLUSTERDOWN`, an unreachable slot
        /// owner, or a `MOVED` after the command's first redirect.
        public var retried = 0
        /// `CLUSTER SLOTS` refreshes sent.
        public var refreshes = 0
    }
    public private(set) var counters = Counters()
    /// The current slot map.
    public private(set) var slotMap = ClusterSlotMap()
    /// Per primary address: connected or not (for `/readyz` and `/metrics`).
    public var nodeHealth: [(node: String, connected: Bool)] {
        slotMap.primaries.map { (node: $0.description, connected: nodes[$0]?.isConnected == true) }
    }

    private let loop: EventLoop
    private let policy: ClusterRetryPolicy
    /// Connection to any seed (rotating): reads the first slot map and reads it again
    /// when no primary connection is up.
    private let bootstrap: RedisConnection
    private var nodes: [ClusterNode: RedisConnection] = [:]
    private var refresh = TopologyRefresh(minIntervalMs: 100)
    private var refreshTimer: LoopTimer?
    private var closed = false
    /// Commands waiting for a retry, in the order they failed; `retryTimer` fires when
    /// the oldest is due.
    private var retries = RetryQueue<Pending>()
    private var retryTimer: LoopTimer?

    /// One command on its way, with its redirect and retry state.
    private final class Pending {
        /// The arguments, for routing (and for sending when `encoded` is nil).
        let args: [String]
        /// The command's RESP bytes when it was given encoded (`RESPCommand`): sent and
        /// resent as they are, so a binary argument (the offsets' `SETRANGE`) survives.
        var encoded: [UInt8]?
        let reply: ((RedisReply) -> Void)?
        var redirects = 0
        var attempts = 0
        var firstFailureMs: UInt64?
        var askTo: ClusterNode?
        init(_ a: [String], _ r: ((RedisReply) -> Void)?) {
            args = a
            reply = r
        }
    }

    /// - Parameter endpoint: a `.cluster(seeds:)` endpoint.
    public init(loop: EventLoop, endpoint: RedisEndpoint, outageGraceMs: UInt64) {
        self.loop = loop
        policy = ClusterRetryPolicy(graceMs: outageGraceMs)
        bootstrap = RedisConnection(loop: loop, endpoint: endpoint, role: .commands)
        bootstrap.onConnect = { [unowned self] in self.requestRefresh(.startup) }
    }

    deinit { close() }

    public func connect() {
        bootstrap.connect()
    }

    public func close() {
        closed = true
        refreshTimer?.cancel()
        retryTimer?.cancel()
        for c in nodes.values { c.close() }
        nodes = [:]
        bootstrap.close()
        for p in retries.removeAll() { p.reply?(.disconnected("cluster client closed")) }
    }

    public func send(_ args: [String], _ reply: ((RedisReply) -> Void)?) {
        dispatch(Pending(args, reply))
    }

    /// `send(_:view:)` for a command written in RESP: routed by its (decoded) arguments,
    /// sent and resent as its own bytes, binary arguments exactly.
    public func send(_ command: RESPCommand, view: @escaping (RedisReplyView) -> Void) {
        precondition(command.isComplete, "RESPCommand: \(command.added) of \(command.argumentCount) arguments added")
        let p = Pending(command.arguments()) { r in view(RedisReplyView(r)) }
        p.encoded = command.encoded
        dispatch(p)
    }

    /// Sends `p` on `c` (its encoded bytes when it has them).
    private func send(_ p: Pending, on c: RedisConnection, _ reply: ((RedisReply) -> Void)?) {
        if let e = p.encoded { c.send(encoded: e, reply) } else { c.send(p.args, reply) }
    }

    // MARK: routing

    /// Routes and sends `p`; on a closed client answers `DISCONNECTED` at once instead
    /// (a handler that `close()` answers may send again, and a send would otherwise open
    /// a new connection to the slot's primary, kept, reconnecting, until the client is freed).
    private func dispatch(_ p: Pending) {
        guard !closed else { return p.reply?(.disconnected("cluster client closed")) ?? () }
        switch ClusterRouting.of(p.args) {
        case .allPrimaries:
            let up = slotMap.primaries.compactMap { nodes[$0] }.filter(\.isConnected)
            guard !up.isEmpty else { return p.reply?(.disconnected("no Redis Cluster primary connected")) ?? () }
            var left = up.count
            var delivered = false
            for c in up {
                send(p, on: c) { r in
                    left -= 1
                    guard !delivered else { return }
                    if r.errorMessage == nil || left == 0 {
                        delivered = true
                        p.reply?(r)
                    }
                }
            }
        case .anyNode:
            let c = slotMap.primaries.lazy.compactMap { self.nodes[$0] }.first(where: \.isConnected)
                ?? (bootstrap.isConnected ? bootstrap : nil)
            guard let c else { return p.reply?(.disconnected("no Redis Cluster node connected")) ?? () }
            send(p, on: c, p.reply)
        case .slot(let slot):
            guard let node = p.askTo ?? slotMap.primary(forSlot: slot) else {
                requestRefresh(.uncoveredSlot)
                return retry(p, why: "CLUSTERDOWN no primary for slot \(slot)")
            }
            let c = connection(to: node)
            guard c.isConnected else {
                requestRefresh(.connectionLost)
                return retry(p, why: "primary \(node) of slot \(slot) not connected")
            }
            if p.askTo != nil {
                p.askTo = nil
                c.send(["ASKING"], nil)
            }
            send(p, on: c) { [weak self] r in self?.answered(p, r) }
        }
    }

    private func answered(_ p: Pending, _ r: RedisReply) {
        let redirect = ClusterRedirect(error: r.errorMessage)
        switch redirect {
        case .none:
            if r.failure?.isDisconnect == true { requestRefresh(.connectionLost) }
            p.reply?(r)
        case .moved(let slot, let node):
            counters.moved += 1
            noteMoved(slot: slot, to: node)
            redirected(p, r, ask: false)
        case .ask(_, let node):
            counters.ask += 1
            p.askTo = node
            redirected(p, r, ask: true)
        case .retryLater:
            retry(p, why: r.errorMessage ?? "TRYAGAIN")
        case .refreshThenRetry:
            requestRefresh(.moved)
            retry(p, why: r.errorMessage ?? "MOVED")
        }
    }

    /// Follows a `MOVED`/`ASK`: the first redirect and every `ASK` at once (an `ASK`
    /// names the one node to ask; a stale slot map's `MOVED` followed by a migration's
    /// `ASK` is the usual path, not a loop), a further `MOVED` after the retry backoff
    /// (`ClusterRetryPolicy.immediateRedirects`), up to `maxRedirects` in all, then the
    /// reply goes to the caller.
    private func redirected(_ p: Pending, _ r: RedisReply, ask: Bool) {
        p.redirects += 1
        guard p.redirects <= policy.maxRedirects else { return p.reply?(r) ?? () }
        if ask || p.redirects <= policy.immediateRedirects { return dispatch(p) }
        retry(p, why: r.errorMessage ?? "MOVED")
    }

    /// Queues `p` for a resend after the backoff (`ClusterRetryPolicy.delay`), behind
    /// every command already waiting; answers `DISCONNECTED …` once the grace is used up.
    private func retry(_ p: Pending, why: String) {
        let now = loop.nowMs
        if p.firstFailureMs == nil { p.firstFailureMs = now }
        p.attempts += 1
        counters.retried += 1
        guard !closed, let wait = policy.delay(attempt: p.attempts, firstFailureMs: p.firstFailureMs!, nowMs: now) else {
            p.reply?(.disconnected("Redis Cluster: \(why)"))
            return
        }
        let wasEmpty = retries.isEmpty
        retries.push(p, nowMs: now, waitMs: wait)
        if wasEmpty { scheduleRetries(now: now) }
    }

    /// Arms `retryTimer` for the oldest waiting command.
    private func scheduleRetries(now: UInt64) {
        guard let due = retries.nextDueMs else { return }
        if retryTimer == nil {
            retryTimer = LoopTimer(loop: loop) { [unowned self] in self.retryDue() }
        }
        retryTimer?.schedule(afterMs: due > now ? due - now : 0)
    }

    /// Resends every waiting command that is due, oldest first; one that fails again
    /// waits behind the rest.
    private func retryDue() {
        guard !closed else { return }
        let now = loop.nowMs
        let due = retries.popDue(nowMs: now)
        for (i, p) in due.enumerated() {
            // A reply handler may close the client: the rest are answered, not sent.
            guard !closed else {
                for q in due[i...] { q.reply?(.disconnected("cluster client closed")) }
                return
            }
            dispatch(p)
        }
        scheduleRetries(now: now)
    }

    private func connection(to node: ClusterNode) -> RedisConnection {
        if let c = nodes[node] { return c }
        let c = RedisConnection(loop: loop, endpoint: .tcp(host: node.host, port: node.port, db: 0), role: .commands)
        c.onLatency = { [unowned self] s in self.onLatency?(s) }
        c.onConnect = { [unowned self] in
            // A (re)connected primary has an empty script cache after a failover:
            // `onConnect` reloads the scripts on every primary.
            if self.isConnected { self.onConnect?() }
            self.updateState(why: "")
        }
        c.onDisconnect = { [unowned self] why in
            self.requestRefresh(.connectionLost)
            self.updateState(why: "primary \(node) lost: \(why)")
        }
        nodes[node] = c
        c.connect()
        return c
    }

    private func updateState(why: String) {
        let up = !slotMap.primaries.isEmpty && slotMap.uncoveredSlots == 0
            && slotMap.primaries.allSatisfy { nodes[$0]?.isConnected == true }
        if up, !isConnected {
            isConnected = true
            onConnect?()
        } else if !up, isConnected {
            isConnected = false
            onDisconnect?(why.isEmpty ? "Redis Cluster incomplete" : why)
        }
        if !up, slotMap.uncoveredSlots > 0 || slotMap.primaries.isEmpty { requestRefresh(.uncoveredSlot) }
    }

    // MARK: topology

    /// Re-reads the slot map soon (coalesced).
    public func refreshTopology() { requestRefresh(.moved) }

    /// A `MOVED <slot> <node>` (here or seen by `ShardedPubSub`): patches the slot,
    /// tells `onSlotMapChanged` when that changed the owner, and re-reads the map.
    public func noteMoved(slot: Int, to node: ClusterNode) {
        guard !closed else { return }   // no connection is opened after `close()`
        if slotMap.primary(forSlot: slot) != node {
            slotMap.moved(slot: slot, to: node)
            _ = connection(to: node)
            onSlotMapChanged?()
        }
        requestRefresh(.moved)
    }

    private func requestRefresh(_ trigger: TopologyRefresh.Trigger) {
        guard !closed else { return }
        switch refresh.request(trigger, nowMs: loop.nowMs) {
        case .coalesced: break
        case .refreshAfter(let ms): scheduleRefresh(afterMs: ms, trigger)
        case .refreshNow: sendRefresh()
        }
    }

    private func scheduleRefresh(afterMs ms: UInt64, _ trigger: TopologyRefresh.Trigger) {
        if refreshTimer == nil {
            refreshTimer = LoopTimer(loop: loop) { [unowned self] in self.requestRefresh(.periodic) }
        }
        refreshTimer?.schedule(afterMs: ms)
    }

    private func sendRefresh() {
        // Ask a connected primary, else the bootstrap connection; with neither, try
        // again shortly (their `onConnect` also asks).
        let asked = slotMap.primaries.first(where: { nodes[$0]?.isConnected == true })
        let c = asked.flatMap { nodes[$0] } ?? (bootstrap.isConnected ? bootstrap : nil)
        guard let c else {
            _ = refresh.finished()
            return scheduleRefresh(afterMs: 200, .periodic)
        }
        counters.refreshes += 1
        c.send(["CLUSTER", "SLOTS"]) { [weak self] r in
            guard let self, !self.closed else { return }
            let ranges = ClusterSlotsReply.ranges(r)
            if !ranges.isEmpty { self.apply(ClusterSlotMap(ranges: ranges)) }
            let again = self.refresh.finished()
            // Until every slot's primary is connected again (a failover in progress
            // still lists the dead primary), keep re-reading: nothing else may ask.
            if again || ranges.isEmpty || !self.isConnected {
                self.scheduleRefresh(afterMs: again ? 0 : 250, .periodic)
            }
        }
    }

    private func apply(_ map: ClusterSlotMap) {
        let old = slotMap
        slotMap = map
        for n in map.primaries { _ = connection(to: n) }
        for (n, c) in nodes where !map.primaries.contains(n) {
            // A former primary (failed over, or left the cluster): its pending replies
            // fail with DISCONNECTED, which callers treat as retryable.
            nodes[n] = nil
            c.close()
        }
        updateState(why: "slot map changed")
        if old != map {
            onTopology?(nodeHealth)
            onSlotMapChanged?()
        }
    }
}

/// Parses a `CLUSTER SLOTS` reply (Redis doc): an array of
/// `[start, end, [host, port, id, …], replica…]`; the first node is the primary.
enum ClusterSlotsReply {
    static func ranges(_ r: RedisReply) -> [ClusterSlotMap.Range] {
        guard let entries = r.array else { return [] }
        var out: [ClusterSlotMap.Range] = []
        for e in entries {
            guard let a = e.array, a.count >= 3, let s = a[0].int, let t = a[1].int,
                  let p = a[2].array, p.count >= 2, let host = p[0].string, let port = p[1].int,
                  !host.isEmpty, host != "?" else { continue }
            out.append(.init(start: Int(s), end: Int(t), primary: ClusterNode(host: host, port: Int(port))))
        }
        return out
    }
}
