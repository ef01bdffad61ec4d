/// The pub/sub channel states of one worker's `SUBSCRIBE` connection across
/// reconnects, as a pure state machine. `Waiter` is what runs once a channel is
/// confirmed (closures in the relay, labels in tests). The caller sends the returned
/// commands (Redis `SUBSCRIBE` / `UNSUBSCRIBE`) and runs the returned waiters.
///
/// Channels are reference-counted: the first `subscribe` sends `SUBSCRIBE` and waits
/// for Redis to confirm it; later subscribers of a confirmed channel are ready at once.
/// A channel nobody wants is unsubscribed after `idleUnsubscribeMs`. One command per
/// channel is in flight at a time: an `UNSUBSCRIBE` confirmation that finds new
/// subscribers subscribes again. After a reconnect every wanted channel is subscribed
/// again, and its subscribers are told (`Resubscribed`) once Redis confirms, so they
/// re-read what they may have missed.
public struct ChannelTable<Waiter> {
    /// A channel's state.
    public enum State: Sendable, Equatable {
        case subscribing
        case subscribed
        case unsubscribing
    }

    /// Something to run once a channel's subscription is confirmed.
    public enum Wake {
        /// A `subscribe` caller's `ready`.
        case ready(Waiter)
        /// The channel came back after a reconnect: its subscribers must re-read.
        case resubscribed
    }

    struct Channel {
        var state: State
        var refs: Int
        var waiters: [Wake]
        var idleSinceMs: UInt64?
    }

    /// A command for the pub/sub connection.
    public enum Command: Sendable, Equatable {
        case subscribe(String)
        case unsubscribe(String)
    }

    /// Channels with no subscriber are unsubscribed after this long, ms.
    public var idleUnsubscribeMs: UInt64
    private var channels: [String: Channel] = [:]

    public init(idleUnsubscribeMs: UInt64 = 30_000) { self.idleUnsubscribeMs = idleUnsubscribeMs }

    /// Number of channels subscribed, being subscribed, or being unsubscribed.
    public var count: Int { channels.count }

    /// A channel's state, `nil` when unknown.
    public func state(of channel: String) -> State? { channels[channel]?.state }

    /// A channel's subscriber count.
    public func refs(of channel: String) -> Int { channels[channel]?.refs ?? 0 }

    /// Adds a reference. Returns `ready` to run now when the channel is confirmed
    /// already, and the command to send (a first `SUBSCRIBE` while connected).
    public mutating func subscribe(_ channel: String, connected: Bool, ready: Waiter) -> (runNow: Waiter?, send: Command?) {
        if var c = channels[channel] {
            c.refs += 1
            c.idleSinceMs = nil
            if case .subscribed = c.state {
                channels[channel] = c
                return (ready, nil)
            }
            c.waiters.append(.ready(ready))
            channels[channel] = c
            return (nil, nil)
        }
        channels[channel] = Channel(state: .subscribing, refs: 1, waiters: [.ready(ready)], idleSinceMs: nil)
        return (nil, connected ? .subscribe(channel) : nil)
    }

    /// Drops a reference; the channel becomes idle at zero.
    public mutating func release(_ channel: String, nowMs: UInt64) {
        guard var c = channels[channel] else { return }
        c.refs = max(0, c.refs - 1)
        if c.refs == 0 { c.idleSinceMs = nowMs }
        channels[channel] = c
    }

    /// Unsubscribes channels idle for `idleUnsubscribeMs`.
    public mutating func sweep(nowMs: UInt64) -> [Command] {
        var out: [Command] = []
        for (name, c) in channels where c.refs == 0 {
            guard case .subscribed = c.state, let since = c.idleSinceMs, nowMs >= since + idleUnsubscribeMs else { continue }
            channels[name]?.state = .unsubscribing
            out.append(.unsubscribe(name))
        }
        return out.sorted { "\($0)" < "\($1)" }
    }

    /// Redis confirmed `SUBSCRIBE channel`; returns what to run.
    public mutating func confirmedSubscribe(_ channel: String) -> [Wake] {
        guard var c = channels[channel] else { return [] }
        c.state = .subscribed
        let waiters = c.waiters
        c.waiters = []
        channels[channel] = c
        return waiters
    }

    /// Redis confirmed `UNSUBSCRIBE channel`; returns a `SUBSCRIBE` when someone wants
    /// the channel again meanwhile, else forgets it.
    public mutating func confirmedUnsubscribe(_ channel: String) -> Command? {
        guard let c = channels[channel] else { return nil }
        if c.refs > 0 || !c.waiters.isEmpty {
            channels[channel]?.state = .subscribing
            return .subscribe(channel)
        }
        channels[channel] = nil
        return nil
    }

    /// The connection was lost: every channel must be subscribed again.
    public mutating func disconnected() {
        for name in channels.keys { channels[name]?.state = .subscribing }
    }

    /// The connection is back: forgets unwanted channels, subscribes the others again
    /// (in name order); channels with subscribers will wake `.resubscribed`.
    public mutating func reconnected() -> [Command] {
        var out: [Command] = []
        for name in channels.keys.sorted() {
            guard let c = channels[name] else { continue }
            if c.refs == 0 && c.waiters.isEmpty {
                channels[name] = nil
                continue
            }
            channels[name]?.state = .subscribing
            if c.refs > 0 { channels[name]?.waiters.append(.resubscribed) }
            out.append(.subscribe(name))
        }
        return out
    }

    /// The server dropped `channel`'s subscription on its own (Redis Cluster sharded
    /// pub/sub: the shard's connection was lost, or the slot moved to another primary,
    /// which sends an unsolicited `sunsubscribe`). Returns the `SUBSCRIBE` to send again
    /// (to the slot's current owner) when someone still wants the channel; its
    /// subscribers wake `.resubscribed` once confirmed. An unwanted channel is forgotten.
    public mutating func dropped(_ channel: String) -> Command? {
        guard var c = channels[channel] else { return nil }
        if c.refs == 0 && c.waiters.isEmpty {
            channels[channel] = nil
            return nil
        }
        c.state = .subscribing
        if c.refs > 0, !c.waiters.contains(where: { if case .resubscribed = $0 { return true } else { return false } }) {
            c.waiters.append(.resubscribed)
        }
        channels[channel] = c
        return .subscribe(channel)
    }

    /// Channels that are wanted (subscribing or subscribed), in name order.
    public var wanted: [String] {
        channels.filter { $0.value.state != .unsubscribing }.keys.sorted()
    }
}
