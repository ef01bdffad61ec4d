import RelayLoop
import RelayRedis
import RelayCluster

/// The worker's pub/sub channel subscriptions over one `pubsub` `RedisConnection`
/// (Redis `SUBSCRIBE`/`UNSUBSCRIBE`), shared by every stream on the worker.
///
/// Channels are reference-counted: the first `subscribe` sends `SUBSCRIBE` and calls
/// `ready` once Redis confirms it (only then can a replay start without missing a
/// message); later subscribers are ready at once. A channel nobody wants is dropped
/// with `UNSUBSCRIBE` after `idleUnsubscribeMs`, so a quick reconnect re-uses it. One
/// command per channel is in flight at a time: hiredis 0.14 drops a channel's
/// callback when an `UNSUBSCRIBE` confirmation overtakes a newer `SUBSCRIBE`.
/// After a reconnect every wanted channel is subscribed again and `onResubscribed`
/// tells the owner, which must re-read what it may have missed.
public final class PubSub {
    /// A `message` on a subscribed channel: channel name and payload bytes.
    public var onMessage: ((String, [UInt8]) -> Void)?
    /// A channel was subscribed again after the connection came back.
    public var onResubscribed: ((String) -> Void)?

    /// Channels with no subscriber are unsubscribed after this long, ms.
    public var idleUnsubscribeMs: UInt64 {
        get { table.idleUnsubscribeMs }
        set {
            table.idleUnsubscribeMs = newValue
            sharded?.idleUnsubscribeMs = newValue
        }
    }

    private let connection: RedisConnection
    private let loop: EventLoop
    /// Redis Cluster: the live channels' sharded subscriptions (`SSUBSCRIBE` on each
    /// slot's primary); `nil` with a single Redis.
    private let sharded: ShardedPubSub?
    /// The channel states (`RelayRedis.ChannelTable`).
    private var table = ChannelTable<() -> Void>()
    private var sweepTimer: LoopTimer?

    /// Takes over `connection` (role `.pubsub`); sets its callbacks. With `sharded`
    /// (Redis Cluster), stream live channels (`relay:{id}:live`) go there and only the
    /// cluster-wide channels (revocations, cancels) use `connection`.
    public init(loop: EventLoop, connection: RedisConnection, sharded: ShardedPubSub? = nil) {
        self.loop = loop
        self.connection = connection
        self.sharded = sharded
        sharded?.onMessage = { [unowned self] ch, payload in self.onMessage?(ch, payload) }
        sharded?.onResubscribed = { [unowned self] ch in self.onResubscribed?(ch) }
        connection.onPush = { [unowned self] r in self.push(r) }
        connection.onConnect = { [unowned self] in self.send(self.table.reconnected()) }
        connection.onDisconnect = { [unowned self] _ in self.table.disconnected() }
        sweepTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in
            self.send(self.table.sweep(nowMs: self.loop.nowMs))
        }
        sweepTimer?.schedule(afterMs: 5_000)
    }

    /// `true` while the pub/sub connection is up.
    public var isConnected: Bool { connection.isConnected }

    /// Number of channels currently subscribed or being subscribed.
    public var channelCount: Int { table.count + (sharded?.channelCount ?? 0) }

    /// Adds a reference to `channel`; `ready` runs on the loop thread once Redis has
    /// confirmed the subscription (at once when it already has).
    public func subscribe(_ channel: String, ready: @escaping () -> Void) {
        if let sharded, StreamKeys.requestID(fromLiveChannel: channel) != nil {
            return sharded.subscribe(channel, ready: ready)
        }
        let (now, command) = table.subscribe(channel, connected: connection.isConnected, ready: ready)
        if let command { send([command]) }
        now?()
    }

    /// Drops a reference taken by `subscribe`. The channel is unsubscribed later if
    /// it stays unused.
    public func release(_ channel: String) {
        if let sharded, StreamKeys.requestID(fromLiveChannel: channel) != nil {
            return sharded.release(channel)
        }
        table.release(channel, nowMs: loop.nowMs)
    }

    private func send(_ commands: [ChannelTable<() -> Void>.Command]) {
        for c in commands {
            switch c {
            case .subscribe(let ch): connection.send(["SUBSCRIBE", ch], nil)
            case .unsubscribe(let ch): connection.send(["UNSUBSCRIBE", ch], nil)
            }
        }
    }

    private func push(_ reply: RedisReply) {
        guard let items = reply.array, items.count >= 3, let kind = items[0].string else { return }
        switch kind {
        case "message":
            guard let ch = items[1].string, case .bulk(let payload) = items[2] else { return }
            onMessage?(ch, payload)
        case "subscribe":
            guard let ch = items[1].string else { return }
            for w in table.confirmedSubscribe(ch) {
                switch w {
                case .ready(let f): f()
                case .resubscribed: onResubscribed?(ch)
                }
            }
        case "unsubscribe":
            guard let ch = items[1].string else { return }
            if let c = table.confirmedUnsubscribe(ch) { send([c]) }
        default:
            break
        }
    }
}
