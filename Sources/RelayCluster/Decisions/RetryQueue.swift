/// Commands waiting for a resend, in the order they failed (`ClusterClient`: after a
/// repeated `MOVED`/`ASK`, `TRYAGAIN`, `CLUSTERDOWN` or an unreachable slot owner).
///
/// Each element is due no earlier than the one queued before it: an element whose own
/// backoff is shorter waits for its predecessor, so elements come out in the order they
/// went in. Pipelined appends of one stream rely on it: a later `XADD <seq>-0` resent
/// ahead of an earlier one would make Redis refuse the earlier one's id, and the
/// appender's gap guard would end the stream. Times are loop ms; no clock is read here.
public struct RetryQueue<Element> {
    private var items: [(dueMs: UInt64, element: Element)] = []
    private var head = 0

    public init() {}

    /// Elements waiting.
    public var count: Int { items.count - head }
    public var isEmpty: Bool { head == items.count }

    /// When the oldest element is due (ms), nil when empty.
    public var nextDueMs: UInt64? { isEmpty ? nil : items[head].dueMs }

    /// Queues `element` for `nowMs + waitMs`, or for the previous element's due time
    /// when that is later. Returns the due time used (ms).
    @discardableResult
    public mutating func push(_ element: Element, nowMs: UInt64, waitMs: UInt64) -> UInt64 {
        let due = max(nowMs &+ waitMs, items.last.map { $0.dueMs } ?? 0)
        if isEmpty {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        items.append((due, element))
        return due
    }

    /// Takes every element due at `nowMs`, oldest first (elements pushed after this call
    /// wait for a later one).
    public mutating func popDue(nowMs: UInt64) -> [Element] {
        var out: [Element] = []
        while head < items.count, items[head].dueMs <= nowMs {
            out.append(items[head].element)
            head += 1
        }
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return out
    }

    /// Takes every element, due or not, oldest first (the client closed).
    public mutating func removeAll() -> [Element] {
        let out = items[head...].map { $0.element }
        items.removeAll()
        head = 0
        return out
    }
}
