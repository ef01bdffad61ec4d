import CLibevent
import RelayCore
import RelayLoop
import RelayRedis
import RelayUpstream

/// One worker (DESIGN §1): a thread owning one libevent loop, one `evhttp` listener
/// on the shared port (`SO_REUSEPORT`), one Redis command connection, one Redis
/// pub/sub connection and the upstream factory. Every request, subscription and
/// generation it accepts lives on it; workers talk to each other only through Redis.
///
/// Created and used on its own thread only; `@unchecked Sendable` solely so the
/// server can `post` drain/stop work to its loop.
final class Worker: @unchecked Sendable {
    let index: Int
    let context: ServerContext
    let loop: EventLoop
    let commands: RedisConnection
    let pubsub: PubSub
    let log: EventLog
    let sessions: SessionStore
    let upstreams: UpstreamFactory
    var metrics: Metrics { context.metrics }
    var config: RelayConfig { context.config }

    private var http: OpaquePointer?
    private var boundSocket: OpaquePointer?
    private var pubsubConnection: RedisConnection
    private var subscriptions: [String: [ObjectIdentifier: Subscription]] = [:]
    private(set) var generations: [String: Generation] = [:]
    private var heartbeatTimer: LoopTimer?
    private var retryTimer: LoopTimer?
    private var leaseTimer: LoopTimer?
    private var replayRetries: [ObjectIdentifier: Subscription] = [:]
    private var redisDownSinceMs: UInt64?
    /// When the command connection last came up; lease expiry waits one lease period
    /// after it, so owners get to refresh leases that lapsed during a Redis outage.
    private var redisUpSinceMs: UInt64 = 0
    private(set) var draining = false
    private var drainDone: (() -> Void)?

    /// - Parameters:
    ///   - listenFD: a bound, listening, non-blocking socket (one per worker, `SO_REUSEPORT`).
    init(index: Int, context: ServerContext, listenFD: Int32, redis: RedisEndpoint) throws {
        self.index = index
        self.context = context
        loop = try EventLoop()
        commands = RedisConnection(loop: loop, endpoint: redis, role: .commands)
        pubsubConnection = RedisConnection(loop: loop, endpoint: redis, role: .pubsub)
        pubsub = PubSub(loop: loop, connection: pubsubConnection)
        log = EventLog(connection: commands, maxLen: context.config.bufferEvents,
                       ttlMs: context.config.bufferTTLms, lossless: context.config.losslessResume)
        sessions = SessionStore(connection: commands, scripts: log.scripts)
        upstreams = context.makeUpstreams()

        commands.onConnect = { [unowned self] in
            self.log.connected()
            self.redisDownSinceMs = nil
            self.redisUpSinceMs = self.loop.nowMs
            Log.debug("redis connected", ["worker": self.index])
        }
        commands.onDisconnect = { [unowned self] why in
            if self.redisDownSinceMs == nil { self.redisDownSinceMs = self.loop.nowMs }
            Log.warn("redis connection lost", ["worker": self.index, "reason": why])
        }
        let metrics = context.metrics
        commands.onLatency = { seconds in metrics.observe(.redisCommand, seconds: seconds) }
        pubsub.onMessage = { [unowned self] ch, payload in self.message(channel: ch, payload: payload) }
        pubsub.onResubscribed = { [unowned self] ch in
            guard let id = StreamKeys.requestID(fromLiveChannel: ch) else { return }
            for s in self.subscriptions[id]?.values ?? [:].values { s.replay() }
        }
        commands.connect()
        pubsubConnection.connect()
        pubsub.subscribe(StreamKeys.revocationsChannel) {}
        pubsub.subscribe(StreamKeys.cancelChannel) {}

        guard let h = evhttp_new(loop.base) else { throw LoopError.cannotCreate }
        http = h
        let methods = EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_DELETE.rawValue
            | EVHTTP_REQ_HEAD.rawValue | EVHTTP_REQ_PUT.rawValue | EVHTTP_REQ_OPTIONS.rawValue | EVHTTP_REQ_PATCH.rawValue
        evhttp_set_allowed_methods(h, UInt16(methods))
        evhttp_set_max_body_size(h, Int(context.config.maxBodyBytes))
        evhttp_set_max_headers_size(h, 160 * 1024)  // room for a 100 KB bogus token to reach the 401 path
        // Requests that never finish sending are dropped after this long; a stream in
        // progress is not affected (checked by StreamTests.testLongQuietStreamOutlivesTheRequestTimeout).
        evhttp_set_timeout(h, Int32(max(1, context.config.requestTimeoutMs / 1000)))
        evhttp_set_gencb(h, { req, arg in
            guard let req, let arg else { return }
            Unmanaged<Worker>.fromOpaque(arg).takeUnretainedValue().handle(req)
        }, Unmanaged.passUnretained(self).toOpaque())
        guard let bound = evhttp_accept_socket_with_handle(h, listenFD) else { throw LoopError.cannotCreate }
        boundSocket = bound

        let hb = UInt64(context.config.heartbeatMs)
        heartbeatTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.tick() }
        heartbeatTimer?.schedule(afterMs: max(10, min(1000, hb / 4)))
        retryTimer = LoopTimer(loop: loop) { [unowned self] in self.retryReplays() }
        leaseTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.leaseTick() }
        leaseTimer?.schedule(afterMs: UInt64(EventLog.leaseMs / 3))
    }

    deinit {
        if let h = http { evhttp_free(h) }
    }

    /// Runs the loop until `stop()`.
    func run() { loop.run() }

    /// Frees the listener and the Redis connections, then stops the loop. Loop thread.
    func stop() {
        if let h = http {
            http = nil
            evhttp_free(h)
        }
        heartbeatTimer?.cancel()
        retryTimer?.cancel()
        leaseTimer?.cancel()
        commands.close()
        pubsubConnection.close()
        loop.stop()
    }

    /// `/readyz`: Redis (commands and pub/sub) reachable and not draining.
    var isReady: Bool { !draining && commands.isConnected && pubsub.isConnected }

    // MARK: HTTP

    private func handle(_ req: OpaquePointer) {
        let ex = HTTPExchange(req)
        route(ex)
    }

    // MARK: Registry

    func register(_ s: Subscription) {
        subscriptions[s.id.value, default: [:]][ObjectIdentifier(s)] = s
        metrics.gauge(.liveConnections, 1)
    }

    func subscriptionEnded(_ s: Subscription) {
        let key = ObjectIdentifier(s)
        replayRetries[key] = nil
        guard subscriptions[s.id.value]?.removeValue(forKey: key) != nil else { return }
        if subscriptions[s.id.value]?.isEmpty == true { subscriptions[s.id.value] = nil }
        pubsub.release(StreamKeys(s.id).live)
        metrics.gauge(.liveConnections, -1)
        Log.info("stream", ["requestId": s.id.value, "tokensSent": s.eventsWritten, "latencyMs": Int(loop.nowMs - s.startedMs),
                            "resumes": s.resumedFrom > 0 ? 1 : 0, "outcome": s.outcome])
    }

    func register(_ g: Generation) {
        generations[g.id.value] = g
        metrics.gauge(.runningGenerations, 1)
        metrics.add(.streamsStarted)
    }

    func generationEnded(_ g: Generation) {
        guard generations[g.id.value] === g else { return }
        generations[g.id.value] = nil
        log.releaseLease(g.id)
        sessions.release(sid: g.sid, id: g.id)
        metrics.gauge(.runningGenerations, -1)
        metrics.observe(.streamDuration, seconds: Double(loop.nowMs - g.startedMs) / 1000)
        if draining { checkDrained() }
    }

    /// Every live subscription on this worker (for revocation, drain, heartbeats).
    var allSubscriptions: [Subscription] { subscriptions.values.flatMap { $0.values } }

    // MARK: Pub/sub

    private func message(channel: String, payload: [UInt8]) {
        if let id = StreamKeys.requestID(fromLiveChannel: channel) {
            guard let subs = subscriptions[id], let e = Worker.parseLive(payload) else { return }
            for s in subs.values { s.live(e) }
        } else if channel == StreamKeys.cancelChannel {
            let id = String(decoding: payload, as: UTF8.self)
            if let g = generations[id] {
                metrics.add(.cancels)
                g.cancel()
            }
        } else if channel == StreamKeys.revocationsChannel {
            revoked(sid: String(decoding: payload, as: UTF8.self))
        }
    }

    /// Parses a live message `<seq> <event JSON>`.
    static func parseLive(_ p: [UInt8]) -> SequencedEvent? {
        guard let sp = p.firstIndex(of: 0x20), sp > 0, sp <= 20 else { return nil }
        var seq: UInt64 = 0
        for b in p[..<sp] {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            seq = seq &* 10 &+ UInt64(b - 0x30)
        }
        return SequencedEvent(seq: seq, json: String(decoding: p[(sp + 1)...], as: UTF8.self))
    }

    /// Cuts every live stream and generation of session `sid` (issue 3).
    func revoked(sid: String) {
        var cut = 0
        for s in allSubscriptions where s.sid == sid {
            s.fail(APIError(status: 401, code: "session_revoked", message: "the session was revoked"))
            cut += 1
        }
        for g in generations.values where g.sid == sid {
            g.abort(APIError(status: 401, code: "session_revoked", message: "the session was revoked"))
        }
        if cut > 0 { metrics.add(.revocations, cut) }
    }

    // MARK: Timers

    private func tick() {
        flushCounters()
        metrics.workerState(index, redisConnected: commands.isConnected && pubsub.isConnected, ready: isReady)
        let now = loop.nowMs
        let hb = UInt64(config.heartbeatMs)
        let nowS = context.nowMs() / 1000
        let grace = UInt64(context.config.redisOutageGraceMs)
        let outage = redisDownSinceMs.map { now >= $0 + grace } ?? false
        for s in allSubscriptions {
            if outage {
                s.fail(APIError(status: 503, code: "redis_unavailable", message: "Redis has been unreachable for more than \(grace) ms"))
                continue
            }
            if let exp = s.tokenExpiry, nowS > exp + Int64(config.jwtLeewaySeconds) {
                s.fail(APIError(status: 401, code: "token_expired", message: "the access token expired; reconnect with a fresh token"))
                continue
            }
            s.heartbeat(nowMs: now, intervalMs: hb)
        }
    }

    /// Every `leaseMs / 3`: refresh the leases of the generations this worker owns,
    /// and for streams read here but generated elsewhere that have been silent for
    /// a while, end them with `upstream_lost` if their owner's lease has lapsed
    /// (issue 4: an instance died mid-generation), or with `stream_lost` if the stream
    /// no longer exists in Redis at all (Redis restarted without persistence, or the
    /// stream expired): no event can ever arrive for it, and without this its readers
    /// would wait forever on heartbeats.
    private func leaseTick() {
        guard commands.isConnected else { return }
        let untilMs = context.nowMs() + Int64(EventLog.leaseMs)
        for g in generations.values where !g.finished {
            log.refreshLease(g.id, instance: context.instance)
            sessions.refresh(sid: g.sid, id: g.id, untilMs: untilMs)
        }
        let now = loop.nowMs
        guard now >= redisUpSinceMs + UInt64(EventLog.leaseMs) else { return }
        let lost = StreamEvent.error(status: 503, code: "upstream_lost",
                                     message: "the relay instance generating this answer stopped; retry the request")
        for (id, subs) in subscriptions where generations[id] == nil {
            guard let quietSince = subs.values.map(\.lastEventMs).max(), now >= quietSince + UInt64(EventLog.leaseMs) / 2,
                  let rid = subs.values.first?.id else { continue }
            log.expireLease(rid, event: lost) { [weak self] r in
                guard case .success(let seq) = r else { return }
                if seq > 0 {
                    Log.warn("owner lease lapsed: stream ended with upstream_lost", ["requestId": id, "seq": Int(seq)])
                } else if seq < 0, let self {
                    let gone = APIError(status: 503, code: "stream_lost",
                                        message: "this answer's events are gone from Redis (restarted without persistence, or expired); retry the request")
                    let readers = self.subscriptions[id]?.values.map { $0 } ?? []
                    for s in readers { s.fail(gone) }
                    if !readers.isEmpty { Log.warn("stream vanished from Redis: readers ended with stream_lost", ["requestId": id, "readers": readers.count]) }
                }
            }
        }
    }

    /// Per-event counters are kept on the worker (no lock per event) and added to the
    /// shared `Metrics` on every tick (at most 1 s behind) and before `/metrics`.
    var eventsDeliveredSinceFlush = 0
    var eventsAppendedSinceFlush = 0

    func flushCounters() {
        if eventsDeliveredSinceFlush > 0 {
            metrics.add(.eventsDelivered, eventsDeliveredSinceFlush)
            eventsDeliveredSinceFlush = 0
        }
        if eventsAppendedSinceFlush > 0 {
            metrics.add(.eventsAppended, eventsAppendedSinceFlush)
            eventsAppendedSinceFlush = 0
        }
    }

    /// A subscription's Redis read failed: retry it shortly (the outage check in
    /// `tick` ends it if Redis stays away longer than the grace period).
    func redisTrouble(_ s: Subscription, _ f: RedisFailure) {
        if f.isDisconnect, redisDownSinceMs == nil { redisDownSinceMs = loop.nowMs }
        replayRetries[ObjectIdentifier(s)] = s
        if retryTimer?.isScheduled == false { retryTimer?.schedule(afterMs: 250) }
    }

    private func retryReplays() {
        let list = replayRetries.values
        replayRetries.removeAll()
        for s in list { s.replay() }
    }

    /// Closes a connection whose unsent output passed `RELAY_MAX_PENDING_BYTES`
    /// (issue 6) and returns true: the client resumes from Redis later; memory stays
    /// bounded however slowly clients read.
    func isSlowConsumer(_ s: Subscription) -> Bool {
        let pending = s.exchange.pendingOutputBytes
        guard pending > config.maxPendingBytes else { return false }
        metrics.add(.slowConsumerDisconnects)
        Log.warn("slow consumer disconnected", ["requestId": s.id.value, "pendingBytes": pending])
        s.abort()
        return true
    }

    // MARK: Drain

    /// Stops accepting, ends live client responses (clients resume elsewhere), keeps
    /// owned generations running until they finish; calls `done` when none is left.
    func drain(done: @escaping () -> Void) {
        draining = true
        drainDone = done
        if let h = http, let b = boundSocket {
            boundSocket = nil
            evhttp_del_accept_socket(h, b)
        }
        for s in allSubscriptions { s.abort() }
        checkDrained()
    }

    /// Drain timeout: end the remaining generations with an error.
    func abortGenerations() {
        for g in generations.values {
            g.abort(APIError(status: 503, code: "upstream_lost", message: "the relay instance shut down before the answer finished"))
        }
    }

    private func checkDrained() {
        if generations.isEmpty, let d = drainDone {
            drainDone = nil
            d()
        }
    }
}
