import RelayAuth
import RelayCore
import RelayLoop
import RelayRedis
import RelayUpstream
import RelayConfiguration
import RelayEventStore
import RelayCluster
import RelayBudgets

/// One worker (docs/ARCHITECTURE.md): a thread owning one libevent loop and, on it, the parts
/// that serve requests — the `HTTPListener` on the shared port (`SO_REUSEPORT`), the
/// `Router` and its route handlers, the `StreamHub` (registries, pub/sub dispatch,
/// ticks), one Redis command connection, one Redis pub/sub connection and the upstream
/// factory. Workers talk to each other only through Redis.
///
/// Created and used on its own thread only; `@unchecked Sendable` solely so the
/// server can `post` drain/stop work to its loop.
final class Worker: @unchecked Sendable {
    let index: Int
    let loop: EventLoop
    private let commands: any RedisCommandChannel
    private let pubsubConnection: RedisConnection
    private let pubsub: PubSub
    private let sharded: ShardedPubSub?
    private let hub: StreamHub
    private var router: Router?
    private var listener: HTTPListener?
    private var stateTimer: LoopTimer?
    private var jwksFetcher: JWKSFetcher?
    private var webhookSender: CompletionWebhookSender?
    private let ticketKeys: ReadTicketKeyLoader
    /// During a drain: waits for the ended responses to be written out.
    private var drainPoll: LoopTimer?
    private let jwks: JWKSKeyStore?

    /// - Parameters:
    ///   - listenFD: a bound, listening, non-blocking socket (one per worker, `SO_REUSEPORT`).
    init(index: Int, context: ServerContext, listenFD: Int32, redis: RedisEndpoint) throws {
        self.index = index
        jwks = context.jwks
        loop = try EventLoop()
        commands = RedisCommandChannels.make(loop: loop, endpoint: redis, outageGraceMs: context.config.redisOutageGraceMs)
        pubsubConnection = RedisConnection(loop: loop, endpoint: redis, role: .pubsub)
        // Redis Cluster: live channels are sharded channels on each slot's primary.
        let loop = self.loop
        sharded = (commands as? ClusterClient).map { ShardedPubSub(loop: loop, cluster: $0) }
        pubsub = PubSub(loop: loop, connection: pubsubConnection, sharded: sharded)
        let config = context.config
        let cipher: AtRestCipher?
        do { cipher = try context.atRestKeys.map { ring throws(AtRestCipher.SetupError) in try AtRestCipher(ring: ring) } } catch {
            throw ConfigError("RELAY_ENCRYPTION_KEYS: \(error.description)")
        }
        let log = EventLog(connection: commands, settings: config.eventStoreSettings, sharded: sharded != nil, cipher: cipher)
        let sessions = SessionStore(connection: commands, scripts: log.scripts)
        hub = StreamHub(index: index, context: context, loop: loop, log: log, pubsub: pubsub, sessions: sessions,
                        ledger: BudgetLedger(connection: commands, scripts: log.scripts))

        // Completion webhooks (docs/PROTOCOL.md §13): every worker queues its answers'
        // messages; worker 0 of each instance sends from the shared outbox.
        var webhookScripts: [LuaSource] = []
        if let url = config.completionWebhookURL {
            let outbox = CompletionWebhookOutbox(connection: commands, scripts: log.scripts, cipher: log.cipher)
            webhookScripts = CompletionWebhookOutbox.allScripts
            hub.completionWebhooks = CompletionWebhookQueue(outbox: outbox, metrics: context.metrics,
                                                            graceMs: config.completionWebhookGraceMs,
                                                            streamTTLms: config.bufferTTLms, wallMs: context.nowMs)
            if index == 0 {
                let commands = self.commands
                webhookSender = try CompletionWebhookSender(
                    loop: loop, outbox: outbox, metrics: context.metrics, url: url,
                    signer: try StandardWebhookSigner(secret: config.completionWebhookSecret ?? ""),
                    timeoutMs: config.completionWebhookTimeoutMs, graceMs: config.completionWebhookGraceMs,
                    retry: CompletionWebhookRetry(maxAttempts: config.completionWebhookMaxAttempts,
                                                  baseMs: config.completionWebhookRetryBaseMs),
                    instance: context.instance, wallMs: context.nowMs, isConnected: { commands.isConnected })
            }
        }
        let hub = self.hub
        let ticketKeys = ReadTicketKeyLoader(keys: context.readTicketKeys, sessions: sessions, loop: loop)
        self.ticketKeys = ticketKeys
        commands.onConnect = { [unowned hub] in
            log.connected(alsoLoading: BudgetLedger.allScripts + webhookScripts)
            hub.redisConnected()
            ticketKeys.load()
            Log.debug("redis connected", ["worker": index])
        }
        commands.onDisconnect = { [unowned hub] why in
            hub.redisDisconnected()
            Log.warn("redis connection lost", ["worker": index, "reason": why])
        }
        let metrics = context.metrics
        commands.onLatency = { seconds in metrics.observe(.redisCommand, seconds: seconds) }
        log.onAuxiliaryFailure = { _ in metrics.add(.appendAuxiliaryErrors) }
        commands.connect()
        pubsubConnection.connect()

        let upstreams = context.makeUpstreams()
        hub.upstreams = upstreams
        let router = Router(context: context, hub: hub, upstreams: upstreams, ticketKeys: ticketKeys,
                            isReady: { [unowned self] in self.isReady },
                            notReadyReason: { [unowned self] in self.notReadyReason })
        self.router = router
        listener = try HTTPListener(loop: loop, config: config, metrics: context.metrics, listenFD: listenFD) { ex in router.route(ex) }
        // One JWKS fetcher per process, on worker 0 (docs/TOKENS.md); the others read its store.
        if index == 0, let store = context.jwks, let url = config.jwtJWKSURL {
            let f = try JWKSFetcher(loop: loop, store: store, metrics: context.metrics, config: config, url: url)
            jwksFetcher = f
            f.start()
        }
        webhookSender?.start()
        // Every second: this worker's Redis and readiness state for `/metrics`
        // (`relay_workers_redis_connected`, `relay_workers_ready`; the alerts use them).
        reportState()
        stateTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.reportState() }
        stateTimer?.schedule(afterMs: 1000)
    }

    private func reportState() {
        var report: Metrics.ClusterReport?
        if let c = commands as? ClusterClient {
            report = .init(nodes: c.nodeHealth, moved: c.counters.moved, ask: c.counters.ask,
                           retried: c.counters.retried, refreshes: c.counters.refreshes)
        }
        hub.metrics.workerState(index, redisConnected: commands.isConnected && pubsub.isConnected, ready: isReady, cluster: report)
    }

    /// Runs the loop until `stop()`.
    func run() { loop.run() }

    /// Frees the listener and the Redis connections, then stops the loop. Loop thread.
    func stop() {
        stateTimer?.cancel()
        drainPoll?.cancel()
        listener?.close()
        listener = nil
        jwksFetcher?.stop()
        jwksFetcher = nil
        webhookSender?.stop()
        webhookSender = nil
        ticketKeys.stop()
        router?.keyWait?.stop()
        hub.stop()
        commands.close()
        pubsubConnection.close()
        sharded?.close()
        loop.stop()
    }

    /// `/readyz`: Redis (commands and pub/sub) reachable, not draining, and a JWKS loaded
    /// when one is configured. With a Redis Cluster: every slot's primary connected.
    var isReady: Bool {
        !hub.draining && commands.isConnected && pubsub.isConnected && (jwks?.hasKeys ?? true)
    }

    /// Why `/readyz` says 503 (names the unreachable cluster primaries).
    var notReadyReason: String {
        if hub.draining { return "draining" }
        if let c = commands as? ClusterClient {
            let down = c.nodeHealth.filter { !$0.connected }.map(\.node)
            if !down.isEmpty { return "Redis Cluster primaries not reachable: " + down.joined(separator: ", ") }
            if !c.isConnected { return "Redis Cluster slot map incomplete" }
        }
        if !commands.isConnected || !pubsub.isConnected { return "Redis is not reachable" }
        if !(jwks?.hasKeys ?? true) { return "no JWKS key set loaded yet" }
        return "Redis is not reachable"
    }

    /// Stops accepting, ends live client responses (clients resume elsewhere), keeps
    /// owned generations running until they finish; calls `done` when none is left and
    /// every ended response has been written out (its terminator included) or reset
    /// (`HTTPExchange.abortGraceMs`), so the process does not exit with a response half sent.
    func drain(done: @escaping () -> Void) {
        listener?.stopAccepting()
        hub.drain { [weak self] in
            guard let self else { return done() }
            let poll = LoopTimer(loop: self.loop, repeating: true) { [weak self] in
                guard let self, (self.listener?.closingConnections ?? 0) == 0 else { return }
                self.drainPoll?.cancel()   // kept until the worker stops: not freed inside its own callback
                done()
            }
            self.drainPoll = poll
            poll.schedule(afterMs: 20)
        }
    }

    /// Drain timeout: end the remaining generations with an error.
    func abortGenerations() { hub.abortGenerations() }
}
