import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import XCTest
import RelayEventStore

/// A command channel in front of a real `RedisConnection` that can lose replies the
/// way a dropped connection does: after `loseReplies(afterXADDs:)`, the `n`-th next
/// `XADD` and every command after it until the replies in flight are in are still
/// executed by Redis, but their callers get `DISCONNECTED` instead of the reply; then
/// the channel "reconnects" (`onConnect`). Loop thread only.
final class LossyChannel: RedisCommandChannel, @unchecked Sendable {
    let inner: RedisConnection
    var onConnect: (() -> Void)?
    var onDisconnect: ((String) -> Void)?
    var onLatency: ((Double) -> Void)?
    var isConnected: Bool { inner.isConnected }
    private var xaddsBeforeLoss: Int?
    private var losing = false
    private var inFlight = 0
    /// Replies replaced by `DISCONNECTED` so far.
    private(set) var lostReplies = 0
    /// Runs (once) right after the caller handled the next `XADD` reply.
    var afterNextXADDReply: (() -> Void)?
    /// Commands (by name, e.g. `SETRANGE`) that Redis does not run while listed: an
    /// unknown command goes in their place, so their callers get an error reply in
    /// order, as a refused write (`-OOM`) would.
    var refused: Set<String> = []
    /// Refuses (as `refused` does) a command whose arguments it returns `true` for
    /// (a narrower choice than by name, e.g. only the offsets' `SETRANGE`); called on
    /// the loop thread for every command while set.
    var refusing: (([String]) -> Bool)?
    /// Commands refused so far (`refused`).
    let refusedCount = LockedBox(0)

    init(_ inner: RedisConnection) {
        self.inner = inner
        inner.onConnect = { [unowned self] in self.onConnect?() }
        inner.onDisconnect = { [unowned self] w in self.onDisconnect?(w) }
    }

    func connect() { inner.connect() }
    func close() { inner.close() }

    /// The `n`-th next `XADD` (1 = the next one) starts a reply loss.
    func loseReplies(afterXADDs n: Int) { xaddsBeforeLoss = n }

    func send(_ args: [String], _ reply: ((RedisReply) -> Void)?) {
        send(args, encoded: nil, reply)
    }

    /// A command written in RESP goes to Redis as its own bytes (binary arguments exact,
    /// as `RedisConnection` and `ClusterClient` send them).
    func send(_ command: RESPCommand, view: @escaping (RedisReplyView) -> Void) {
        send(command.arguments(), encoded: command.encoded) { view(RedisReplyView($0)) }
    }

    private func send(_ args: [String], encoded: [UInt8]?, _ reply: ((RedisReply) -> Void)?) {
        if let name = args.first, refused.contains(name) || refusing?(args) == true {
            refusedCount.mutate { $0 += 1 }
            return inner.send(["REFUSED-BY-TEST-" + name], reply)
        }
        if args.first == "XADD", let n = xaddsBeforeLoss {
            if n <= 1 {
                xaddsBeforeLoss = nil
                losing = true
            } else {
                xaddsBeforeLoss = n - 1
            }
        }
        let lose = losing
        inFlight += 1
        let answered: (RedisReply) -> Void = { [unowned self] r in
            self.inFlight -= 1
            if lose {
                self.lostReplies += 1
                reply?(.disconnected("reply lost (test)"))
            } else {
                reply?(r)
            }
            if args.first == "XADD", let hook = self.afterNextXADDReply {
                self.afterNextXADDReply = nil
                hook()
            }
            if self.losing && self.inFlight == 0 {
                self.losing = false
                self.onDisconnect?("test")
                self.onConnect?()
            }
        }
        if let encoded { inner.send(encoded: encoded, answered) } else { inner.send(args, answered) }
    }
}

/// An `EventLog` and `StreamAppender`s on their own event loop thread, as a worker runs
/// them, against the test's `redis-server`. Everything the test does on them is posted
/// to the loop; results are read through `LockedBox`es.
final class AppendHarness: @unchecked Sendable {
    let loop: EventLoop
    let channel: LossyChannel
    let log: EventLog
    private let thread: Thread
    /// Connections made so far (`onConnect`).
    let connections = LockedBox(0)

    init(redisURL: String, maxLen: Int = 200, ttlMs: Int = 60_000, lossless: Bool = true) throws {
        loop = try EventLoop()
        channel = LossyChannel(RedisConnection(loop: loop, endpoint: try RedisEndpoint.parse(redisURL), role: .commands))
        log = EventLog(connection: channel, settings: EventStoreSettings(maxLen: maxLen, ttlMs: ttlMs, lossless: lossless))
        let l = log, n = connections
        channel.onConnect = {
            l.connected()
            n.mutate { $0 += 1 }
        }
        // Connect first: a loop with no event registered returns from `run()` at once.
        let lp = loop, ch = channel
        loop.post { ch.connect() }
        thread = Thread { lp.run() }
        thread.start()
    }

    /// Runs `body` on the loop thread.
    func run(_ body: @escaping @Sendable () -> Void) { loop.post(body) }

    /// Stops the loop (closing the connection) and waits for its thread (5 s at most).
    func stop() {
        let ch = channel, lp = loop
        loop.post { ch.close(); lp.stop() }
        let t = thread
        pollUntil(timeout: 5) { t.isFinished }
    }
}

/// What a stream's appender run by a test reported (`RelayTestCase.startAppender`).
final class AppendOutcome: @unchecked Sendable {
    let created = LockedBox<Bool?>(nil)
    let drained = LockedBox(0)
    let failure = LockedBox<AppendStop?>(nil)
}

extension RelayTestCase {
    /// An `AppendHarness` on the test's Redis, stopped at teardown, once connected.
    func appendHarness(maxLen: Int = 200) throws -> AppendHarness {
        let h = try AppendHarness(redisURL: redis.url, maxLen: maxLen)
        addTeardownBlock { h.stop() }
        try eventually(10, "the harness to connect") { h.connections.value > 0 }
        return h
    }

    /// Creates stream `id` with `log` and an appender for it on `loop` (kept in
    /// `appender`); returns its outcome boxes once the stream is created (within
    /// `createTimeout` s). The appender (and its timers) is freed on the loop thread,
    /// before the harness stops (teardown blocks run last-registered first): libevent
    /// runs without its locking, so a timer freed from the test thread while the loop
    /// runs is a data race.
    func startAppender(loop: EventLoop, log: EventLog, _ id: RequestID, appender: LockedBox<StreamAppender?>,
                       createTimeout: Double = 5) throws -> AppendOutcome {
        let o = AppendOutcome()
        nonisolated(unsafe) let log = log
        loop.post {
            log.create(id, owner: "o", sid: "s", instance: "test", nowMs: 1, budgetKey: "", promptEstimate: 0) { r in
                o.created.value = (try? r.get()) ?? false
            }
            let a = StreamAppender(log: log, loop: loop, id: id)
            a.onDrained = { o.drained.mutate { $0 += 1 } }
            a.onPermanentFailure = { f in o.failure.value = f }
            appender.value = a
        }
        addTeardownBlock { loop.post { appender.value = nil } }
        try eventually(createTimeout, "the stream to be created") { o.created.value == true }
        return o
    }

    /// Runs the text writes `writes` of stream `k` in order with `log` on `loop`
    /// (pipelined) and waits (up to `timeout` s) for every answer; all must succeed.
    func writeTexts(loop: EventLoop, log: EventLog, _ k: StreamKeys, _ writes: [TextCheckpoint.Write],
                    timeout: Double = 10, file: StaticString = #filePath, line: UInt = #line) throws {
        nonisolated(unsafe) let log = log
        let ok = LockedBox(0), bad = LockedBox<[String]>([])
        loop.post {
            for w in writes {
                log.writeText(k, w) { r in
                    switch r {
                    case .success: ok.mutate { $0 += 1 }
                    case .failure(let f): bad.mutate { $0.append(f.message) }
                    }
                }
            }
        }
        try eventually(timeout, "writes answered") { ok.value + bad.value.count == writes.count }
        XCTAssertEqual(bad.value, [], "a write failed", file: file, line: line)
    }
}
