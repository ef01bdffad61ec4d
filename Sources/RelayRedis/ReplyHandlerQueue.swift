/// The reply handlers of a `RedisConnection`'s commands in flight, first in first out.
///
/// Redis answers the commands of one connection in the order they were sent ("Redis
/// pipelining", redis.io), and the connection reads its replies in that order
/// (`redisGetReplyFromReader`); when the connection drops or is closed, every handler
/// still here is failed once, oldest first. So the handler of the reply at hand is
/// always the oldest one here, and no per-command heap box or callback entry is made.
///
/// A ring buffer that grows by doubling and never shrinks (a few hundred entries at a
/// loop turn's worth of appends). Loop thread only.
struct ReplyHandlerQueue {
    /// One command's handler and when the command was sent (`CLOCK_MONOTONIC` ns, 0
    /// when its round trip is not timed).
    struct Entry {
        var handler: ReplyHandler
        var sentNs: UInt64
    }

    private var ring: ContiguousArray<Entry> = []
    private var head = 0
    /// Handlers waiting for their reply.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Appends the handler of the command just sent.
    mutating func push(_ handler: ReplyHandler, sentNs: UInt64) {
        if count == ring.count { grow() }
        var tail = head + count
        if tail >= ring.count { tail -= ring.count }
        ring[tail] = Entry(handler: handler, sentNs: sentNs)
        count += 1
    }

    /// Removes and returns the oldest handler; `nil` when none waits.
    mutating func pop() -> Entry? {
        guard count > 0 else { return nil }
        let e = ring[head]
        ring[head].handler = .none   // drop the closure reference now, not when the slot is reused
        head += 1
        if head == ring.count { head = 0 }
        count -= 1
        return e
    }

    /// Removes and returns every waiting handler, oldest first.
    mutating func removeAll() -> [Entry] {
        var out: [Entry] = []
        out.reserveCapacity(count)
        while let e = pop() { out.append(e) }
        return out
    }

    private mutating func grow() {
        let newCapacity = Swift.max(16, ring.count * 2)
        var bigger = ContiguousArray<Entry>()
        bigger.reserveCapacity(newCapacity)
        for i in 0..<count {
            var at = head + i
            if at >= ring.count { at -= ring.count }
            bigger.append(ring[at])
        }
        while bigger.count < newCapacity { bigger.append(Entry(handler: .none, sentNs: 0)) }
        ring = bigger
        head = 0
    }
}

/// What runs when a command's reply arrives.
enum ReplyHandler {
    /// Nothing (a slot that was emptied).
    case none
    /// The reply copied out of hiredis (`RedisReply`).
    case reply((RedisReply) -> Void)
    /// The reply read in place (`RedisReplyView`, valid during the call only).
    case view((RedisReplyView) -> Void)
}
