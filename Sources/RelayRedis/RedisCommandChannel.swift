import RelayLoop
import RelayConfiguration

/// What the event log, the session store and the budget ledger need from Redis: send
/// a command, learn when Redis comes and goes. One `RedisConnection` (single Redis) or
/// one `ClusterClient` (Redis Cluster, routing each command by its key's hash slot)
/// implements it. Loop thread only.
public protocol RedisCommandChannel: AnyObject {
    /// Called when the channel becomes usable (after each (re)connection; for a cluster,
    /// when every slot's primary is connected). Scripts must be (re)loaded here.
    var onConnect: (() -> Void)? { get set }
    /// Called when the channel stops being usable (a connection lost).
    var onDisconnect: ((String) -> Void)? { get set }
    /// Round trip of each answered command, seconds (metrics).
    var onLatency: ((Double) -> Void)? { get set }
    /// `true` while commands can be sent.
    var isConnected: Bool { get }
    /// Starts connecting (non-blocking).
    func connect()
    /// Sends one command; `reply` runs on the loop thread with its reply, or an error
    /// (`DISCONNECTED …` when it could not be sent or its reply was lost).
    func send(_ args: [String], _ reply: ((RedisReply) -> Void)?)
    /// Sends one command whose reply is only looked at: `view` reads it during the call
    /// (`RedisReplyView`: error or not, null or not; valid only inside the call), or gets
    /// `DISCONNECTED …` like `send(_:_:)`. The default copies the reply and wraps it;
    /// `RedisConnection` reads hiredis' reply in place.
    func send(_ args: [String], view: @escaping (RedisReplyView) -> Void)
    /// `send(_:view:)` for a command already written in RESP (`RESPCommand`, complete:
    /// every announced argument added). Its arguments may be binary (the offsets'
    /// `SETRANGE`), so there is no default that would decode them as text: each channel
    /// sends the bytes as they are (`RedisConnection` to hiredis; `ClusterClient` keeps
    /// `encoded` for resends).
    func send(_ command: RESPCommand, view: @escaping (RedisReplyView) -> Void)
    /// Closes for good; pending replies fail.
    func close()
}

extension RedisCommandChannel {
    /// `send(_:view:)` for channels without in-place replies: the reply is copied
    /// (`send(_:_:)`) and handed over as a view.
    public func send(_ args: [String], view: @escaping (RedisReplyView) -> Void) {
        send(args) { r in view(RedisReplyView(r)) }
    }
}

extension RedisConnection: RedisCommandChannel {}
