import CHiredis
import RelayCore
import RelayLoop
import RelayConfiguration

/// One hiredis async connection attached to a worker's `EventLoop`, confined to that
/// loop's thread. It reconnects by itself with capped exponential backoff
/// (100 ms doubling to 2 s) and tells its owner through `onConnect` / `onDisconnect`.
///
/// A `commands` connection answers each `send` once, in order (Redis pipelines the
/// commands of one connection). A `pubsub` connection delivers every reply to
/// `onPush` (subscribe confirmations and `message` arrays, see the Redis pub/sub doc).
public final class RedisConnection {
    /// What the connection is used for.
    public enum Role { case commands, pubsub }

    /// Called after each (re)connection, once `SELECT` is queued. Loop thread.
    public var onConnect: (() -> Void)?
    /// Called when the connection is lost (pending commands have already failed).
    public var onDisconnect: ((String) -> Void)?
    // The properties read or written for every command and reply are marked
    // `@exclusivity(unchecked)`: the connection is confined to its loop thread and no
    // mutation of them spans a call out, so the run-time exclusivity check
    // (`swift_beginAccess`, about 75 instructions, six per command) guards nothing here
    // (issue 14 profile: 2 % of the relay's instructions on this class alone).

    /// `pubsub` role: every reply pushed by the server.
    @exclusivity(unchecked) public var onPush: ((RedisReply) -> Void)?
    /// `commands` role: the round trip of answered commands, seconds (metrics). Sampled:
    /// one command in flight at a time is timed (the next command sent after its reply
    /// came back), so a busy connection reports about one round trip per round trip
    /// instead of paying two clock reads and a histogram update per command (issue 14).
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
    @exclusivity(unchecked) private var context: UnsafeMutablePointer<redisAsyncContext>?
    private var reconnectTimer: LoopTimer?
    private var backoffMs: UInt64 = 100
    private var closed = false
    /// `.cluster` endpoints: the seed tried next.
    private var seedIndex = 0
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
        let ac: UnsafeMutablePointer<redisAsyncContext>?
        switch endpoint {
        case .tcp(let host, let port, _): ac = redisAsyncConnect(host, Int32(port))
        case .unix(let path, _): ac = redisAsyncConnectUnix(path)
        case .cluster(let seeds):
            // A cluster-wide pub/sub or bootstrap connection: any node will do; each
            // failed attempt moves on to the next seed.
            let s = seeds[seedIndex % max(1, seeds.count)]
            ac = redisAsyncConnect(s.host, Int32(s.port))
        }
        guard let ac, ac.pointee.err == 0 else {
            if let ac { redisAsyncFree(ac) }
            scheduleReconnect()
            return
        }
        context = ac
        streamrelay_redis_set_data(ac, Unmanaged.passUnretained(self).toOpaque())
        redisLibeventAttach(ac, loop.base)
        redisAsyncSetConnectCallback(ac) { ac, status in
            guard let ac, let me = RedisConnection.owner(ac) else { return }
            me.connected(status == REDIS_OK)
        }
        redisAsyncSetDisconnectCallback(ac) { ac, _ in
            guard let ac, let me = RedisConnection.owner(ac) else { return }
            me.lost("disconnected")
        }
    }

    private static func owner(_ ac: UnsafePointer<redisAsyncContext>) -> RedisConnection? {
        guard let p = streamrelay_redis_get_data(ac) else { return nil }
        return Unmanaged<RedisConnection>.fromOpaque(p).takeUnretainedValue()
    }

    private func connected(_ ok: Bool) {
        guard ok else {
            // hiredis frees the context after a failed connect callback.
            context = nil
            scheduleReconnect()
            return
        }
        isConnected = true
        backoffMs = 100
        switch endpoint {
        case .tcp(_, _, let db) where db != 0, .unix(_, let db) where db != 0:
            send(["SELECT", String(db)], nil)
        default: break
        }
        onConnect?()
    }

    private func lost(_ why: String) {
        // hiredis frees the context after the disconnect callback.
        context = nil
        let was = isConnected
        isConnected = false
        if was { onDisconnect?(why) }
        if !closed { scheduleReconnect() }
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
    /// `reply` runs on the loop thread with the reply, or `.error("DISCONNECTED …")`
    /// when the connection is down or drops before answering.
    public func send(_ args: [String], _ reply: ((RedisReply) -> Void)?) {
        if let reply { send(args, handler: .reply(reply)) } else { send(args, handler: .none) }
    }

    /// Sends one command whose reply is only looked at (error or not, null or not):
    /// `view` reads it in place during the call, copying nothing (`RedisReplyView`), or
    /// gets a `DISCONNECTED …` error like `send(_:_:)`. Issue 14: the append's replies.
    public func send(_ args: [String], view: @escaping (RedisReplyView) -> Void) {
        send(args, handler: .view(view))
    }

    /// Sends one command already written in RESP (`RESPCommand`): its bytes go to
    /// hiredis as they are (`redisAsyncFormattedCommand`), no argument is copied or
    /// converted again. `view` as in `send(_:view:)`.
    public func send(_ command: RESPCommand, view: @escaping (RedisReplyView) -> Void) {
        precondition(command.isComplete, "RESPCommand: \(command.added) of \(command.argumentCount) arguments added")
        let handler = ReplyHandler.view(view)
        guard let ac = context, isConnected || role == .commands else {
            return RedisConnection.fail(handler, "DISCONNECTED Redis is not connected")
        }
        let status = command.withTerminatedBytes { cmd, len in self.command(ac, cmd, len, handler) }
        if status != REDIS_OK { RedisConnection.fail(handler, "DISCONNECTED command not sent") }
    }

    private func send(_ args: [String], handler: ReplyHandler) {
        guard let ac = context, isConnected || role == .commands else {
            return RedisConnection.fail(handler, "DISCONNECTED Redis is not connected")
        }
        // The command is written in the Redis protocol (RESP, "Redis serialization
        // protocol specification": `*<argc>\r\n` then `$<len>\r\n<bytes>\r\n` per
        // argument) straight into one temporary buffer and handed to hiredis as a
        // formatted command: no argv/length arrays, no printf-style formatting and no
        // intermediate allocation by hiredis. This runs once per Redis command, i.e.
        // several times per event. The arguments are read in place (no copy of each
        // `String` out of the array).
        args.withUnsafeBufferPointer { send($0, on: ac, handler: handler) }
    }

    private func send(_ args: UnsafeBufferPointer<String>, on ac: UnsafeMutablePointer<redisAsyncContext>,
                      handler: ReplyHandler) {
        var total = 1 + ASCIIDecimal.digits(UInt64(args.count)) + 2
        for i in 0..<args.count {
            let n = args[i].utf8.count
            total += 1 + ASCIIDecimal.digits(UInt64(n)) + 2 + n + 2
        }
        // One more byte: a NUL after the command. hiredis scans a formatted command with
        // `strchr` to find its name and, for (P|S)SUBSCRIBE, every channel argument
        // (`nextArgument` in async.c), so the buffer must end like a C string.
        let status: Int32 = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: total + 1) { storage in
            let base = storage.baseAddress!
            var off = 0
            off = RedisConnection.header(UInt8(ascii: "*"), args.count, into: base, at: off)
            for i in 0..<args.count {
                let at = off
                if let end = args[i].utf8.withContiguousStorageIfAvailable({ RedisConnection.bulk($0, into: base, at: at) }) {
                    off = end
                } else {
                    var a = args[i]   // not contiguous UTF-8 (a bridged string): made native first
                    off = a.withUTF8 { RedisConnection.bulk($0, into: base, at: at) }
                }
            }
            base[off] = 0
            return base.withMemoryRebound(to: CChar.self, capacity: off + 1) { cmd in command(ac, cmd, off, handler) }
        }
        if status != REDIS_OK { RedisConnection.fail(handler, "DISCONNECTED command not sent") }
    }

    /// `$<n>\r\n<bytes>\r\n` (a RESP bulk string) at `off`; returns the end.
    private static func bulk(_ src: UnsafeBufferPointer<UInt8>, into base: UnsafeMutablePointer<UInt8>, at off: Int) -> Int {
        var at = header(UInt8(ascii: "$"), src.count, into: base, at: off)
        if let sp = src.baseAddress, src.count > 0 { (base + at).initialize(from: sp, count: src.count) }
        at += src.count
        base[at] = 13
        base[at + 1] = 10
        return at + 2
    }

    /// `<marker><n>\r\n` (a RESP array or bulk string header) at `off`; returns the end.
    private static func header(_ marker: UInt8, _ n: Int, into base: UnsafeMutablePointer<UInt8>, at off: Int) -> Int {
        base[off] = marker
        let digits = ASCIIDecimal.digits(UInt64(n))
        ASCIIDecimal.write(UInt64(n), digits: digits, to: base + off + 1)
        base[off + digits + 1] = 13
        base[off + digits + 2] = 10
        return off + digits + 3
    }

    /// Free bytes the output buffer grows to at once (16 KiB: a loop turn's appends at
    /// a few hundred events per turn).
    static let outputReserveBytes = 16 * 1024

    private func command(_ ac: UnsafeMutablePointer<redisAsyncContext>, _ cmd: UnsafePointer<CChar>, _ len: Int,
                         _ handler: ReplyHandler) -> Int32 {
        // One growth per loop turn's batch of commands instead of a doubling realloc
        // chain (each write starts from an empty hiredis buffer).
        streamrelay_redis_reserve_output(ac, len, RedisConnection.outputReserveBytes)
        if role == .pubsub {
            return redisAsyncFormattedCommand(ac, { ac, r, _ in
                guard let ac, let me = RedisConnection.owner(ac) else { return }
                me.onPush?(RedisReply(r?.assumingMemoryBound(to: redisReply.self)))
            }, nil, cmd, len)
        }
        if case .none = handler {
            // No callback: hiredis still keeps the command's place in its reply order and
            // drops the reply (`redisProcessCallbacks`), so the handler queue stays aligned.
            return redisAsyncFormattedCommand(ac, nil, nil, cmd, len)
        }
        // hiredis' reply callback of every command sent with a handler: the reply (NULL
        // when the connection dropped or was freed with the command pending) belongs to
        // the oldest handler (`ReplyHandlerQueue`). After `close()` the context no
        // longer names its owner, which failed the queue itself.
        let st = redisAsyncFormattedCommand(ac, { ac, r, _ in
            guard let ac, let me = RedisConnection.owner(ac) else { return }
            me.replied(r?.assumingMemoryBound(to: redisReply.self))
        }, nil, cmd, len)
        if st == REDIS_OK {
            var sentNs: UInt64 = 0
            if !timing, onLatency != nil {
                timing = true
                sentNs = RedisConnection.monotonicNs()
            }
            handlers.push(handler, sentNs: sentNs)
            pendingReplies += 1
        }
        return st
    }

    private func replied(_ r: UnsafeMutablePointer<redisReply>?) {
        guard let entry = handlers.pop() else { return }
        pendingReplies -= 1
        if entry.sentNs > 0 {
            timing = false
            if r != nil, let report = onLatency { report(Double(RedisConnection.monotonicNs() &- entry.sentNs) / 1e9) }
        }
        switch entry.handler {
        case .none: break
        case .reply(let body): body(RedisReply(r))
        case .view(let body): body(RedisReplyView(r))
        }
    }

    /// Fails every handler still waiting with `DISCONNECTED`, oldest first (once each).
    private func failPending() {
        let waiting = handlers.removeAll()
        pendingReplies = 0
        timing = false
        for e in waiting { RedisConnection.fail(e.handler, "DISCONNECTED connection to Redis closed") }
    }

    /// Runs `handler` with the error reply `message`.
    private static func fail(_ handler: ReplyHandler, _ message: String) {
        switch handler {
        case .none: break
        case .reply(let body): body(.error(message))
        case .view(let body): body(RedisReplyView(.error(message)))
        }
    }

    /// Closes the connection for good (no reconnect). Pending replies fail.
    public func close() {
        closed = true
        reconnectTimer?.cancel()
        reconnectTimer = nil
        if let ac = context {
            context = nil
            isConnected = false
            streamrelay_redis_set_data(ac, nil)
            redisAsyncFree(ac)
        }
        failPending()
    }

    /// `CLOCK_MONOTONIC`, ns.
    static func monotonicNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
