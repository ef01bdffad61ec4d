import Foundation
import RelayCore
import RelayLoop
import RelayRedis
import Synchronization
import RelayConfiguration
import RelayHTTP

/// A relay instance: N workers on N threads sharing one port, started by `start()`,
/// drained by `drain()` (SIGTERM) and stopped by `stop()`.
public final class RelayServer: Sendable {
    /// What every worker shares.
    public let context: ServerContext
    private let redis: RedisEndpoint
    private let state = Mutex(State())

    /// Workers and threads are only touched through their loops' `post`; the state
    /// itself is guarded by the mutex.
    struct State: @unchecked Sendable {
        var workers: [Worker] = []
        var threads: [Thread] = []
        var port = 0
        var stopped = false
    }

    /// - Parameter redis: where the event log lives (`REDIS_URL` or the private server).
    public init(context: ServerContext, redis: RedisEndpoint) {
        self.context = context
        self.redis = redis
    }

    /// Opens the listening sockets and starts the workers.
    /// - Returns: the bound port (useful with port 0).
    /// - Throws: when the address cannot be bound or a worker cannot be created.
    @discardableResult
    public func start() throws -> Int {
        let cfg = context.config
        let (fds, port) = try ListenSockets.open(host: cfg.listenHost, port: cfg.listenPort, count: cfg.workers)
        let ready = DispatchSemaphore(value: 0)
        let failures = Mutex<[String]>([])
        var threads: [Thread] = []
        let created = Mutex<[Worker]>([])
        for (i, fd) in fds.enumerated() {
            let ctx = context
            let endpoint = redis
            let t = Thread {
                let w: Worker
                do {
                    w = try Worker(index: i, context: ctx, listenFD: fd, redis: endpoint)
                } catch {
                    failures.withLock { $0.append("worker \(i): \(error)") }
                    ready.signal()
                    return
                }
                created.withLock { $0.append(w) }
                ready.signal()
                w.run()
            }
            t.name = "relay-worker-\(i)"
            t.stackSize = 1 << 20
            threads.append(t)
            t.start()
        }
        for _ in fds { ready.wait() }
        if let f = failures.withLock({ $0.first }) { throw ListenError(f) }
        let workers = created.withLock { $0 }
        let allThreads = threads
        state.withLock {
            $0.workers = workers
            $0.threads = allThreads
            $0.port = port
        }
        return port
    }

    /// The bound port.
    public var port: Int { state.withLock { $0.port } }

    /// `true` once every worker has Redis connected (both connections).
    public func isReady() -> Bool {
        let ws = state.withLock { $0.workers }
        let flags = Mutex<[Bool]>([])
        let sem = DispatchSemaphore(value: 0)
        for w in ws {
            w.loop.post {
                flags.withLock { $0.append(w.isReady) }
                sem.signal()
            }
        }
        for _ in ws { sem.wait() }
        return flags.withLock { $0.allSatisfy { $0 } && $0.count == ws.count }
    }

    /// Graceful drain (docs/DEPLOYING.md): stop accepting, `/readyz` 503, end live client
    /// responses (clients resume elsewhere), keep owned generations until they finish
    /// or `RELAY_DRAIN_TIMEOUT` passes (then they end with `upstream_lost`), then stop.
    /// Blocks until done.
    public func drain() {
        let ws = state.withLock { $0.workers }
        let group = DispatchGroup()
        for w in ws {
            group.enter()
            w.loop.post { w.drain { group.leave() } }
        }
        if group.wait(timeout: .now() + .milliseconds(context.config.drainTimeoutMs)) == .timedOut {
            Log.warn("drain timeout: ending the remaining generations", [:])
            for w in ws { w.loop.post { w.abortGenerations() } }
            _ = group.wait(timeout: .now() + .seconds(5))
        }
        stop()
    }

    /// Stops every worker at once (closing connections) and waits for the threads.
    public func stop() {
        let ws: [Worker] = state.withLock { s in
            if s.stopped { return [] }
            s.stopped = true
            return s.workers
        }
        for w in ws { w.loop.post { w.stop() } }
        let threads = state.withLock { $0.threads }
        for t in threads { while !t.isFinished { usleep(2000) } }
    }
}
