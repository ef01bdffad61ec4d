/// Which connection a listener closes to keep file descriptors for the relay's own needs
/// (health probes, Redis reconnections, upstream calls) when clients hold nearly all of them
/// (docs/OPERATIONS.md "File descriptors").
///
/// The candidates are the connections that sent bytes of a first request but have not
/// completed its head: they are not yet a request, let alone an authenticated stream, and
/// one that trickles a byte a second costs a descriptor for the whole `RELAY_REQUEST_TIMEOUT`.
/// The oldest is shed first (it has had the longest to finish its head). Two triggers:
///
/// * `admitted(descriptor:limit:)` — a connection got descriptor number `descriptor` while the
///   soft limit is `limit` (`RLIMIT_NOFILE`). The kernel hands out the lowest free number
///   (open(2)), so every descriptor below it is in use; at or above `limit - reserve` fewer
///   than `reserve` are certainly free, and the oldest candidate is shed. This keeps the
///   reserve free before `accept()` ever fails.
/// * `acceptFailed()` — `accept()` failed for lack of descriptors anyway (other threads took
///   them, or the limit was lowered while running): the oldest candidate is shed and the
///   listener retries at once instead of pausing (`AcceptBackoff` when there is none).
///
/// Pure: connections are the caller's ids (increasing with age is not required: the order of
/// `awaitingHead` calls is the age order). Amortised O(1) per call.
public struct ConnectionShedding: Sendable {
    /// Candidates in the order they started sending (ids; some may have left `live`).
    private var order: [UInt64] = []
    private var head = 0
    private var live: Set<UInt64> = []

    /// The reserve for a descriptor limit: a sixteenth of it, at least 16 and at most 1,024.
    public static func reserve(forLimit limit: Int) -> Int {
        min(1_024, max(16, limit / 16))
    }

    /// An empty set of candidates.
    public init() {}

    /// Connections currently candidates for shedding.
    public var candidates: Int { live.count }

    /// Connection `id` sent the first bytes of its first request; its head is not complete.
    public mutating func awaitingHead(_ id: UInt64) {
        guard live.insert(id).inserted else { return }
        order.append(id)
    }

    /// Connection `id` completed a request head (or was refused, or closed): never a
    /// candidate again.
    public mutating func leftCandidates(_ id: UInt64) {
        guard live.remove(id) != nil else { return }
        if live.isEmpty {
            order.removeAll(keepingCapacity: true)
            head = 0
        } else if order.count - head > 2 * live.count + 64 {
            // Mostly ids that left: keep the live ones, in order.
            order = order[head...].filter { live.contains($0) }
            head = 0
        }
    }

    /// A connection was given descriptor number `descriptor` with the soft limit at `limit`.
    /// Returns the connection to shed now (already removed from the candidates), or `nil`.
    /// Call it before that connection itself becomes a candidate.
    public mutating func admitted(descriptor: Int, limit: Int) -> UInt64? {
        guard limit > 0, descriptor >= limit - Self.reserve(forLimit: limit) else { return nil }
        return popOldest()
    }

    /// `accept()` failed for lack of descriptors. Returns the connection to shed (already
    /// removed from the candidates), or `nil` when there is none (then back off).
    public mutating func acceptFailed() -> UInt64? {
        popOldest()
    }

    private mutating func popOldest() -> UInt64? {
        while head < order.count {
            let id = order[head]
            head += 1
            if live.remove(id) != nil {
                compact()
                return id
            }
        }
        order.removeAll(keepingCapacity: true)
        head = 0
        return nil
    }

    /// Drops the consumed front once it is most of the array.
    private mutating func compact() {
        if head > 64 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
