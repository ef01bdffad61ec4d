import RelayLoop
import RelayRedis

/// Sharded pub/sub on a Redis Cluster (Redis 7 `SSUBSCRIBE` / `SPUBLISH`): each stream's
/// live channel is subscribed on the primary that owns its hash slot, over one `pubsub`
/// connection per primary, and moved when the slot moves (unsolicited `sunsubscribe`,
/// a `MOVED` error, a slot-map change) or the primary fails over (connection lost).
/// Reference counting, idle unsubscribes and re-reads after a resubscription follow
/// `ChannelTable` (the same rules as `PubSub`).
///
/// hiredis 0.14 knows only `SUBSCRIBE`/`PSUBSCRIBE`: it routes a pushed array to a
/// callback by the channel name (element 1) of a plain subscription, and would abort
/// on a push it cannot route. So every sharded channel is also subscribed plainly on
/// the same connection (`SUBSCRIBE ch` then `SSUBSCRIBE ch`; nobody `PUBLISH`es on it
/// in cluster mode), which makes hiredis deliver `ssubscribe` / `smessage` /
/// `sunsubscribe` arrays for `ch`, and an anchor channel keeps the connection in
/// hiredis' subscribed mode. Each `SSUBSCRIBE` leaves one small callback record in
/// hiredis' `sub.invalid` list until the connection closes; the connection is
/// recycled after `recycleAfter` of them. Loop thread only.
public final class ShardedPubSub {
    /// A `smessage` on a live channel: channel name and payload bytes.
    public var onMessage: ((String, [UInt8]) -> Void)?
    /// A channel was subscribed again (its slot moved, its primary failed over).
    public var onResubscribed: ((String) -> Void)?

    /// `SSUBSCRIBE`s on one connection after which it is recycled (bounds hiredis'
    /// `sub.invalid` records, about 40 bytes each).
    public var recycleAfter = 100_000

    private let loop: EventLoop
    private let cluster: ClusterClient
    private var table = ChannelTable<() -> Void>()
    /// Where each wanted channel is (being) subscribed.
    private var nodeOf: [String: ClusterNode] = [:]
    private var nodes: [ClusterNode: Shard] = [:]
    private var sweepTimer: LoopTimer?
    /// Plain channel that keeps each connection in hiredis' subscribed mode.
    static let anchor = "relay:sharded-anchor"

    final class Shard {
        let connection: RedisConnection
        var subscribesSent = 0
        init(_ c: RedisConnection) { connection = c }
    }

    public init(loop: EventLoop, cluster: ClusterClient) {
        self.loop = loop
        self.cluster = cluster
        cluster.onSlotMapChanged = { [unowned self] in self.slotMapChanged() }
        sweepTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in
            self.send(self.table.sweep(nowMs: self.loop.nowMs))
        }
        sweepTimer?.schedule(afterMs: 5_000)
    }

    /// Channels with no subscriber are unsubscribed after this long, ms.
    public var idleUnsubscribeMs: UInt64 {
        get { table.idleUnsubscribeMs }
        set { table.idleUnsubscribeMs = newValue }
    }

    /// Number of channels subscribed or being subscribed.
    public var channelCount: Int { table.count }

    /// Adds a reference to `channel`; `ready` runs once its primary confirmed `SSUBSCRIBE`.
    public func subscribe(_ channel: String, ready: @escaping () -> Void) {
        let (now, command) = table.subscribe(channel, connected: true, ready: ready)
        if let command { send([command]) }
        now?()
    }

    /// Drops a reference taken by `subscribe`.
    public func release(_ channel: String) {
        table.release(channel, nowMs: loop.nowMs)
    }

    /// Closes every shard connection.
    public func close() {
        sweepTimer?.cancel()
        for s in nodes.values { s.connection.close() }
        nodes = [:]
    }

    private func send(_ commands: [ChannelTable<() -> Void>.Command]) {
        for c in commands {
            switch c {
            case .subscribe(let ch):
                guard let node = cluster.slotMap.primary(forKey: ch) else {
                    // No owner known yet: the next slot-map change subscribes it.
                    nodeOf[ch] = nil
                    cluster.refreshTopology()
                    continue
                }
                nodeOf[ch] = node
                let shard = self.shard(node)
                if shard.connection.isConnected { sendSubscribe(ch, on: shard) }
            case .unsubscribe(let ch):
                guard let node = nodeOf[ch], let shard = nodes[node], shard.connection.isConnected else {
                    // Nothing to undo on a lost connection: forget it.
                    nodeOf[ch] = nil
                    if let again = table.confirmedUnsubscribe(ch) { send([again]) }
                    continue
                }
                shard.connection.send(["SUNSUBSCRIBE", ch], nil)
                shard.connection.send(["UNSUBSCRIBE", ch], nil)
            }
        }
    }

    private func sendSubscribe(_ ch: String, on shard: Shard) {
        shard.connection.send(["SUBSCRIBE", ch], nil)
        shard.connection.send(["SSUBSCRIBE", ch], nil)
        shard.subscribesSent += 1
    }

    private func shard(_ node: ClusterNode) -> Shard {
        if let s = nodes[node] { return s }
        let c = RedisConnection(loop: loop, endpoint: .tcp(host: node.host, port: node.port, db: 0), role: .pubsub)
        let s = Shard(c)
        c.onPush = { [unowned self] r in self.push(r, from: node) }
        c.onConnect = { [unowned self] in self.shardConnected(node) }
        c.onDisconnect = { [unowned self] _ in self.shardLost(node) }
        nodes[node] = s
        c.connect()
        return s
    }

    private func shardConnected(_ node: ClusterNode) {
        guard let s = nodes[node] else { return }
        s.subscribesSent = 0
        s.connection.send(["SUBSCRIBE", ShardedPubSub.anchor], nil)
        for ch in table.wanted where nodeOf[ch] == node {
            _ = table.dropped(ch)
            sendSubscribe(ch, on: s)
        }
    }

    private func shardLost(_ node: ClusterNode) {
        // Its channels wait for the reconnection or move with the next slot map.
        for (ch, n) in nodeOf where n == node { _ = table.dropped(ch) }
        cluster.refreshTopology()
    }

    private func slotMapChanged() {
        for ch in table.wanted {
            let owner = cluster.slotMap.primary(forKey: ch)
            guard owner != nodeOf[ch] else { continue }
            if let old = nodeOf[ch], let s = nodes[old], s.connection.isConnected {
                s.connection.send(["SUNSUBSCRIBE", ch], nil)
                s.connection.send(["UNSUBSCRIBE", ch], nil)
            }
            if let again = table.dropped(ch) { send([again]) }
        }
        // Connections to nodes that are no longer primaries and serve no channel.
        let primaries = Set(cluster.slotMap.primaries)
        for (n, s) in nodes where !primaries.contains(n) && !nodeOf.values.contains(n) {
            nodes[n] = nil
            s.connection.close()
        }
    }

    private func push(_ reply: RedisReply, from node: ClusterNode) {
        if let e = reply.errorMessage {
            // `MOVED` for an `SSUBSCRIBE` sent to a former owner: re-read the map; the
            // change moves the channel.
            if case .moved(let slot, let to) = ClusterRedirect(error: e) {
                if cluster.slotMap.primary(forSlot: slot) == to {
                    slotMapChanged()   // the map knew already: move what still points elsewhere
                    cluster.refreshTopology()
                } else {
                    cluster.noteMoved(slot: slot, to: to)
                }
            }
            return
        }
        guard let items = reply.array, items.count >= 3, let kind = items[0].string, let ch = items[1].string,
              ch != ShardedPubSub.anchor else { return }
        let current = nodeOf[ch] == node
        switch kind {
        case "smessage":
            guard current, case .bulk(let payload) = items[2] else { return }
            onMessage?(ch, payload)
        case "ssubscribe":
            guard current else { return }
            for w in table.confirmedSubscribe(ch) {
                switch w {
                case .ready(let f): f()
                case .resubscribed: onResubscribed?(ch)
                }
            }
            if let s = nodes[node], s.subscribesSent >= recycleAfter { s.connection.close(); recycle(node) }
        case "sunsubscribe":
            guard current else { return }
            if table.state(of: ch) == .unsubscribing {
                nodeOf[ch] = nil
                if let again = table.confirmedUnsubscribe(ch) { send([again]) }
            } else {
                // Unsolicited: the slot left this primary (Redis 7 sends `sunsubscribe`
                // to a shard channel's subscribers when its slot is deleted or moved).
                cluster.refreshTopology()
                if let again = table.dropped(ch) { send([again]) }
            }
        default:
            break   // the plain `subscribe` / `unsubscribe` confirmations
        }
    }

    private func recycle(_ node: ClusterNode) {
        nodes[node] = nil
        shardLost(node)
        _ = shard(node)
    }
}
