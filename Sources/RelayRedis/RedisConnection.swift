import CHiredis
import CLibevent
import Glibc
import RelayCore
import RelayLoop
import RelayConfiguration

/// One Redis connection attached to a worker's `EventLoop`, confined to that loop's
/// thread. It reconnects by itself with capped exponential backoff (100 ms doubling to
/// 2 s) and tells its owner through `onConnect` / `onDisconnect`; a connect that has not
/// completed after `connectTimeoutMs` (5 s) fails like a refused one.
///
/// hiredis' non-blocking context does the protocol: commands are appended to
/// its output buffer as written RESP (`redisAppendFormattedCommand`), written when the
/// socket is writable (`redisBufferWrite`), and replies are read and parsed with
/// `redisBufferRead` / `redisGetReplyFromReader` — the calls hiredis' README documents
/// for pipelining and for event-library adapters. The connection watches the socket
/// with two libevent events of its own. hiredis' async layer is not used: per command
/// it parsed the formatted command again to find its name (five `strncasecmp` against
/// the subscribe commands), allocated a callback entry and re-added the write event,
/// ≈ 700 instructions per command on the append path, while the connection already
/// keeps its reply handlers in order itself (`ReplyHandlerQueue`).
///
/// hiredis writes with `write(2)`: the process must ignore `SIGPIPE` (the `stream-relay`
/// executable does, in `main.swift`), or a write to a Redis that went away kills it
/// instead of failing the connection.
///
/// A `commands` connection answers each `send` once, in order (Redis pipelines the
/// commands of one connection). A `pubsub` connection delivers every reply to
/// `onPush` (subscribe confirmations and `message` arrays, see the Redis pub/sub doc).
public final class RedisConnection {
    /// What the connection is used for.
    public enum Role { case commands, pubsub }

    /// Called after each (re)connection (a `SELECT` of the URL's database went first). Loop thread.
    public var onConnect: (() -> Void)?
    /// Called when the connection is lost (pending commands have already failed).
    public var onDisconnect: ((String) -> Void)?
    // The properties read or written for every command and reply are marked
    // `@exclusivity(unchecked)`: the connection is confined to its loop thread and no
    // mutation of them spans a call out, so the run-time exclusivity check
    // (`swift_beginAccess`, about 75 instructions, six per command) guards nothing here
    // (profiled: 2 % of the relay's instructions on this class alone, docs/BENCHMARKS.md).

    /// `pubsub` role: every reply pushed by the server.
    @exclusivity(unchecked) public var onPush: ((RedisReply) -> Void)?
    /// `commands` role: the round trip of answered commands, seconds (metrics). Sampled:
    /// one command in flight at a time is timed (the next command sent after its reply
    /// came back), so a busy connection reports about one round trip per round trip
    /// instead of paying two clock reads and a histogram update per command.
    @exclusivity(unchecked) public var onLatency: ((Double) -> Void)?
    /// A command being timed for `onLatency` is in flight.
    @exclusivity(unchecked) private var timing = false

    /// `true` between a successful connect and the next disconnect.
    @exclusivity(unchecked) public private(set) var isConnected = false
    /// Replies not yet received for commands sent (for metrics and backpressure).
    @exclusivity(unchecked) public private(set) var pendingReplies = 0

    /// Where Redis is (`REDIS_URL`).
    public let endpoint: RedisEndpoint
    /// Commands or pub/sub.
    public let role: Role
    private let loop: EventLoop
    @exclusivity(unchecked) private var context: UnsafeMutablePointer<redisContext>?
    /// libevent events on the context's socket: readable (persistent, once connected)
    /// and writable (armed while output waits, and for the connect's completion).
    @exclusivity(unchecked) private var readEvent: OpaquePointer?
    @exclusivity(unchecked) private var writeEvent: OpaquePointer?
    @exclusivity(unchecked) private var writeArmed = false
    /// The non-blocking connect has not completed yet.
    @exclusivity(unchecked) private var connecting = false
    /// How long a connect may take, ms, before it counts as failed: the commands queued
    /// meanwhile get `DISCONNECTED` and the next attempt follows the backoff. Without it
    /// a Redis whose address drops packets holds them for the kernel's SYN retries (about
    /// two minutes on Linux). Default `defaultConnectTimeoutMs`; set before `connect()`.
    public var connectTimeoutMs: UInt64 = RedisConnection.defaultConnectTimeoutMs
    /// 5,000 ms: the SYN and its first two retransmissions (sent after 1 s and 3 s: the
    /// initial retransmission timeout of 1 s, doubled, RFC 6298 §2 and §5.5).
    public static let defaultConnectTimeoutMs: UInt64 = 5_000
    /// When the connect under way times out (`EventLoop.nowMs`).
    @exclusivity(unchecked) private var connectDeadlineMs: UInt64 = 0
    /// Counts contexts made: a handler that closes (or closes and reopens) the
    /// connection while a read's replies are dispatched ends that dispatch.
    @exclusivity(unchecked) private var contextNumber = 0
    private var reconnectTimer: LoopTimer?
    private var backoffMs: UInt64 = 100
    private var closed = false
    /// `.cluster` endpoints: the seed tried next.
    private var seedIndex = 0
    /// The buffer a command given as `[String]` is written into (RESP), reused: hiredis
    /// copies each command into its output buffer at once.
    private let written = RESPCommand()
    /// `commands` role: the handlers of the commands awaiting their reply, in send order.
    @exclusivity(unchecked) private var handlers = ReplyHandlerQueue()

    public init(loop: EventLoop, endpoint: RedisEndpoint, role: Role) {
        self.loop = loop
        self.endpoint = endpoint
        self.role = role
    }

    deinit {
        close()
    }

    /// Starts connecting (non-blocking; `onConnect` tells when it is up).
    public func connect() {
        guard !closed, context == nil else { return }
        let c: UnsafeMutablePointer<redisContext>?
        switch endpoint {
        case .tcp(let host, let port, _): c = redisConnectNonBlock(host, Int32(port))
        case .unix(let path, _): c = redisConnectUnixNonBlock(path)
        case .cluster(let seeds):
            // A cluster-wide pub/sub or bootstrap connection: any node will do; each
            // failed attempt moves on to the next seed.
            let s = seeds[seedIndex % max(1, seeds.count)]
            c = redisConnectNonBlock(s.host, Int32(s.port))
        }
        guard let c, c.pointee.err == 0, c.pointee.fd >= 0 else {
            if let c { redisFree(c) }
            scheduleReconnect()
            return
        }
        context = c
        contextNumber &+= 1
        connecting = true
        connectDeadlineMs = loop.nowMs + connectTimeoutMs
        let me = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(loop.base, c.pointee.fd, Int16(EV_READ | EV_PERSIST), { _, _, arg in
            // Held for the call: a reply handler may drop the last other reference.
            let me = Unmanaged<RedisConnection>.fromOpaque(arg!).takeUnretainedValue()
            withExtendedLifetime(me) { me.readable() }
        }, me)
        writeEvent = event_new(loop.base, c.pointee.fd, Int16(EV_WRITE), { _, what, arg in
            let me = Unmanaged<RedisConnection>.fromOpaque(arg!).takeUnretainedValue()
            withExtendedLifetime(me) { me.writable(timedOut: what & Int16(EV_TIMEOUT) != 0) }
        }, me)
        // A non-blocking connect completes (or fails) when the socket turns writable.
        armWrite()
        // The database is selected first, ahead of any command sent while connecting.
        switch endpoint {
        case .tcp(_, _, let db) where db != 0, .unix(_, let db) where db != 0:
            _ = write(["SELECT", String(db)], on: c, handler: .none)
        default: break
        }
    }

    /// The socket is writable: completes a pending connect, then writes what waits.
    /// `timedOut`: the connect's deadline passed first (`connectTimeoutMs`).
    private func writable(timedOut: Bool) {
        writeArmed = false
        guard let c = context else { return }
        if connecting {
            // libevent reports a write event whose timeout expired as `EV_TIMEOUT` only, also
            // when the socket turned writable in the same loop turn (`timeout_process` runs
            // after the poll and re-activates the event with `EV_TIMEOUT` alone): a loop turn
            // that ran past the deadline would fail a connect that had completed.
            if timedOut && !RedisConnection.isWritable(c.pointee.fd) {
                return lost("connect timed out after \(connectTimeoutMs) ms")
            }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(c.pointee.fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0 { error = errno }
            if error == EINPROGRESS { return armWrite() }
            guard error == 0 else { return lost("connect failed: \(String(cString: strerror(error)))") }
            connecting = false
            event_add(readEvent, nil)
            let number = contextNumber
            connected()
            // `onConnect` may have closed the connection (or closed and reopened it).
            guard contextNumber == number, context != nil else { return }
        }
        guard streamrelay_redis_output_length(c) > 0 else { return }
        var done: Int32 = 0
        if redisBufferWrite(c, &done) != REDIS_OK { return lost(RedisConnection.reason(c)) }
        if done == 0 { armWrite() }
    }

    /// Whether `fd` is writable now (`poll(2)` with a 0 ms timeout, `POLLOUT`; an error
    /// or hang-up counts too: the connect has ended, `SO_ERROR` tells how). Asked once,
    /// when a connect's deadline fires.
    private static func isWritable(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0
    }

    /// Watches for writability once output waits (one `event_add` per batch, not per command);
    /// while connecting, until the connect's deadline at the latest.
    private func armWrite() {
        guard !writeArmed, let e = writeEvent else { return }
        writeArmed = true
        guard connecting else {
            event_add(e, nil)
            return
        }
        let now = loop.nowMs
        let left = connectDeadlineMs > now ? connectDeadlineMs - now : 0
        var tv = timeval(tv_sec: Int(left / 1000), tv_usec: Int(left % 1000) * 1000)
        event_add(e, &tv)
    }

    /// The socket is readable: reads once (up to hiredis' 16 KiB) and runs the handler
    /// of every complete reply, oldest first.
    private func readable() {
        guard let c = context else { return }
        if redisBufferRead(c) != REDIS_OK { return lost(RedisConnection.reason(c)) }
        let number = contextNumber
        while true {
            var reply: UnsafeMutableRawPointer?
            if redisGetReplyFromReader(c, &reply) != REDIS_OK { return lost(RedisConnection.reason(c)) }
            guard let reply else { return }
            dispatch(reply.assumingMemoryBound(to: redisReply.self))
            freeReplyObject(reply)
            // A handler closed the connection (its context is freed) or reconnected it.
            guard contextNumber == number, context != nil else { return }
        }
    }

    /// hiredis' description of the context's error (`errstr`).
    private static func reason(_ c: UnsafeMutablePointer<redisContext>) -> String {
        guard c.pointee.err != 0 else { return "disconnected" }
        return withUnsafeBytes(of: c.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    private func connected() {
        isConnected = true
        backoffMs = 100
        onConnect?()
    }

    /// The connection failed or dropped: every pending handler gets `DISCONNECTED`
    /// (before `onDisconnect`), then a reconnect is scheduled.
    private func lost(_ why: String) {
        freeContext()
        let was = isConnected
        isConnected = false
        failPending("connection to Redis lost")
        if was { onDisconnect?(why) }
        if !closed { scheduleReconnect() }
    }

    /// Frees the socket's events, then the context (which closes the socket).
    private func freeContext() {
        if let e = readEvent { event_free(e) }
        if let e = writeEvent { event_free(e) }
        readEvent = nil
        writeEvent = nil
        writeArmed = false
        connecting = false
        if let c = context {
            context = nil
            redisFree(c)
        }
    }

    private func scheduleReconnect() {
        guard !closed else { return }
        seedIndex &+= 1
        if reconnectTimer == nil {
            reconnectTimer = LoopTimer(loop: loop) { [unowned self] in self.connect() }
        }
        reconnectTimer?.schedule(afterMs: backoffMs)
        backoffMs = min(backoffMs * 2, 2000)
    }

    /// Sends one command (arguments are binary-safe; see each command's Redis doc).
    /// `reply` runs on the loop thread with the reply, or `.disconnected(reason)`
    /// when the connection is down or drops before answering.
    public func send(_ args: [String], _ reply: ((RedisReply) -> Void)?) {
        if let reply { send(args, handler: .reply(reply)) } else { send(args, handler: .none) }
    }

    /// Sends one command whose reply is only looked at (error or not, null or not):
    /// `view` reads it in place during the call, copying nothing (`RedisReplyView`), or
    /// gets a `DISCONNECTED …` error like `send(_:_:)`. For the append's replies.
    public func send(_ args: [String], view: @escaping (RedisReplyView) -> Void) {
        send(args, handler: .view(view))
    }

    /// Sends one command already written in RESP (`RESPCommand`): its bytes go to
    /// hiredis as they are (`redisAppendFormattedCommand`), no argument is copied or
    /// converted again. `view` as in `send(_:view:)`.
    public func send(_ command: RESPCommand, view: @escaping (RedisReplyView) -> Void) {
        precondition(command.isComplete, "RESPCommand: \(command.added) of \(command.argumentCount) arguments added")
        let handler = ReplyHandler.view(view)
        submit(handler) { c in command.withTerminatedBytes { cmd, len in self.command(c, cmd, len, handler) } }
    }

    /// Sends one command given as its RESP bytes (`RESPCommand.encoded`: one complete
    /// command, binary-safe), as they are; `reply` as in `send(_:_:)`. For a command kept
    /// to be resent (`ClusterClient` after `MOVED`/`ASK`).
    public func send(encoded: [UInt8], _ reply: ((RedisReply) -> Void)?) {
        let handler: ReplyHandler = reply.map { .reply($0) } ?? .none
        submit(handler) { c in
            encoded.withUnsafeBytes { b -> Int32 in
                guard let base = b.baseAddress, b.count > 0 else { return REDIS_ERR }
                return command(c, base.assumingMemoryBound(to: CChar.self), b.count, handler)
            }
        }
    }

    private func send(_ args: [String], handler: ReplyHandler) {
        submit(handler) { c in write(args, on: c, handler: handler) }
    }

    /// Runs `write` (which hands one command to hiredis, `command(_:_:_:_:)`) when the
    /// connection can take commands, and fails `handler` with `DISCONNECTED …` when it
    /// cannot or hiredis refused the command.
    private func submit(_ handler: ReplyHandler, _ write: (UnsafeMutablePointer<redisContext>) -> Int32) {
        guard let c = context, isConnected || role == .commands else {
            return RedisConnection.fail(handler, "Redis is not connected")
        }
        if write(c) != REDIS_OK { RedisConnection.fail(handler, "command not sent") }
    }

    /// Writes `args` in RESP into the connection's reused `RESPCommand` and hands the
    /// bytes to hiredis as a formatted command: no argv/length arrays and no printf-style
    /// formatting by hiredis. The arguments are read in place. `REDIS_OK` or `REDIS_ERR`.
    private func write(_ args: [String], on c: UnsafeMutablePointer<redisContext>, handler: ReplyHandler) -> Int32 {
        let w = written
        w.start(argumentCount: args.count)
        for a in args { w.add(a) }
        return w.withTerminatedBytes { cmd, len in command(c, cmd, len, handler) }
    }

    /// Free bytes the output buffer grows to at once (16 KiB: a loop turn's appends at
    /// a few hundred events per turn).
    static let outputReserveBytes = 16 * 1024

    /// Appends one written command to the output buffer and queues its handler (in the
    /// `pubsub` role every reply goes to `onPush` instead). `REDIS_OK` or `REDIS_ERR`.
    private func command(_ c: UnsafeMutablePointer<redisContext>, _ cmd: UnsafePointer<CChar>, _ len: Int,
                         _ handler: ReplyHandler) -> Int32 {
        // One growth per loop turn's batch of commands instead of a doubling realloc
        // chain (each write starts from an empty hiredis buffer).
        streamrelay_redis_reserve_output(c, len, RedisConnection.outputReserveBytes)
        let st = redisAppendFormattedCommand(c, cmd, len)
        guard st == REDIS_OK else { return st }
        armWrite()   // while connecting it is armed already, for the connect's completion
        guard role == .commands else { return st }
        // Every command keeps its place in the reply order, one without a handler too.
        var sentNs: UInt64 = 0
        if !timing, onLatency != nil {
            timing = true
            sentNs = RedisConnection.monotonicNs()
        }
        handlers.push(handler, sentNs: sentNs)
        pendingReplies += 1
        return st
    }

    /// A reply arrived: in the `pubsub` role it is pushed to `onPush`; in the `commands`
    /// role it belongs to the oldest waiting handler (Redis answers in order).
    private func dispatch(_ r: UnsafeMutablePointer<redisReply>) {
        guard role == .commands else {
            onPush?(RedisReply(r))
            return
        }
        guard let entry = handlers.pop() else { return }
        pendingReplies -= 1
        if entry.sentNs > 0 {
            timing = false
            if let report = onLatency { report(Double(RedisConnection.monotonicNs() &- entry.sentNs) / 1e9) }
        }
        switch entry.handler {
        case .none: break
        case .reply(let body): body(RedisReply(r))
        case .view(let body): body(RedisReplyView(r))
        }
    }

    /// Fails every handler still waiting with the error `message`, oldest first (once each).
    private func failPending(_ why: String) {
        let waiting = handlers.removeAll()
        pendingReplies = 0
        timing = false
        for e in waiting { RedisConnection.fail(e.handler, why) }
    }

    /// Runs `handler` with the local failure `RedisReply.disconnected(why)`.
    private static func fail(_ handler: ReplyHandler, _ why: String) {
        switch handler {
        case .none: break
        case .reply(let body): body(.disconnected(why))
        case .view(let body): body(RedisReplyView(.disconnected(why)))
        }
    }

    /// Closes the connection for good (no reconnect). Pending replies fail.
    public func close() {
        closed = true
        reconnectTimer?.cancel()
        reconnectTimer = nil
        freeContext()
        isConnected = false
        failPending("connection to Redis closed")
    }

    /// `CLOCK_MONOTONIC`, ns.
    static func monotonicNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
