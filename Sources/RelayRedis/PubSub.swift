import RelayLoop

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
    private enum State {
        case subscribing
        case subscribed
        case unsubscribing
    }

    private struct Channel {
        var state: State
        var refs: Int
        var waiters: [() -> Void]
        var idleSinceMs: UInt64?
    }

    /// A `message` on a subscribed channel: channel name and payload bytes.
    public var onMessage: ((String, [UInt8]) -> Void)?
    /// A channel was subscribed again after the connection came back.
    public var onResubscribed: ((String) -> Void)?

    /// Channels with no subscriber are unsubscribed after this long, ms.
    public var idleUnsubscribeMs: UInt64 = 30_000

    private let connection: RedisConnection
    private let loop: EventLoop
    private var channels: [String: Channel] = [:]
    private var sweepTimer: LoopTimer?

    /// Takes over `connection` (role `.pubsub`); sets its callbacks.
    public init(loop: EventLoop, connection: RedisConnection) {
        self.loop = loop
        self.connection = connection
        connection.onPush = { [unowned self] r in self.push(r) }
        connection.onConnect = { [unowned self] in self.reconnected() }
        connection.onDisconnect = { [unowned self] _ in self.disconnected() }
        sweepTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.sweep() }
        sweepTimer?.schedule(afterMs: 5_000)
    }

    /// `true` while the pub/sub connection is up.
    public var isConnected: Bool { connection.isConnected }

    /// Number of channels currently subscribed or being subscribed.
    public var channelCount: Int { channels.count }

    /// Adds a reference to `channel`; `ready` runs on the loop thread once Redis has
    /// confirmed the subscription (at once when it already has).
    public func subscribe(_ channel: String, ready: @escaping () -> Void) {
        if var c = channels[channel] {
            c.refs += 1
            c.idleSinceMs = nil
            if case .subscribed = c.state {
                channels[channel] = c
                ready()
                return
            }
            c.waiters.append(ready)
            channels[channel] = c
            return
        }
        channels[channel] = Channel(state: .subscribing, refs: 1, waiters: [ready], idleSinceMs: nil)
        if connection.isConnected { connection.send(["SUBSCRIBE", channel], nil) }
    }

    /// Drops a reference taken by `subscribe`. The channel is unsubscribed later if
    /// it stays unused.
    public func release(_ channel: String) {
        guard var c = channels[channel] else { return }
        c.refs = max(0, c.refs - 1)
        if c.refs == 0 { c.idleSinceMs = loop.nowMs }
        channels[channel] = c
    }

    private func sweep() {
        let now = loop.nowMs
        for (name, c) in channels where c.refs == 0 {
            guard case .subscribed = c.state, let since = c.idleSinceMs, now >= since + idleUnsubscribeMs else { continue }
            channels[name]?.state = .unsubscribing
            connection.send(["UNSUBSCRIBE", name], nil)
        }
    }

    private func push(_ reply: RedisReply) {
        guard let items = reply.array, items.count >= 3, let kind = items[0].string else { return }
        switch kind {
        case "message":
            guard let ch = items[1].string, case .bulk(let payload) = items[2] else { return }
            onMessage?(ch, payload)
        case "subscribe":
            guard let ch = items[1].string, var c = channels[ch] else { return }
            c.state = .subscribed
            let waiters = c.waiters
            c.waiters = []
            channels[ch] = c
            for w in waiters { w() }
        case "unsubscribe":
            guard let ch = items[1].string, let c = channels[ch] else { return }
            if c.refs > 0 || !c.waiters.isEmpty {
                channels[ch]?.state = .subscribing
                connection.send(["SUBSCRIBE", ch], nil)
            } else {
                channels[ch] = nil
            }
        default:
            break
        }
    }

    private func disconnected() {
        for name in channels.keys { channels[name]?.state = .subscribing }
    }

    private func reconnected() {
        for (name, c) in channels {
            if c.refs == 0 && c.waiters.isEmpty {
                channels[name] = nil
                continue
            }
            channels[name]?.state = .subscribing
            let notify = c.refs > 0
            channels[name]?.waiters.append { [weak self] in
                if notify { self?.onResubscribed?(name) }
            }
            connection.send(["SUBSCRIBE", name], nil)
        }
    }
}
