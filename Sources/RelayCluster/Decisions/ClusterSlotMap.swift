/// Which primary serves each of the 16384 hash slots (Redis `CLUSTER SLOTS` /
/// `CLUSTER SHARDS` docs). Built from a topology reply, patched by `MOVED` redirects.
public struct ClusterSlotMap: Sendable, Equatable {
    /// One contiguous range of slots and the primary that serves it.
    public struct Range: Sendable, Equatable {
        /// First slot, inclusive.
        public var start: Int
        /// Last slot, inclusive.
        public var end: Int
        /// The primary serving the range.
        public var primary: ClusterNode
        public init(start: Int, end: Int, primary: ClusterNode) {
            self.start = start
            self.end = end
            self.primary = primary
        }
    }

    /// Distinct primaries, in first-seen order.
    public private(set) var primaries: [ClusterNode] = []
    /// Per slot: index into `primaries`, or -1 when no node serves the slot.
    private var owners: [Int16]

    /// An empty map (no slot served).
    public init() {
        owners = Array(repeating: -1, count: HashSlot.count)
    }

    /// A map from the ranges of a topology reply; ranges outside 0…16383 are clipped.
    public init(ranges: [Range]) {
        self.init()
        for r in ranges { assign(r.start...r.end, to: r.primary) }
    }

    /// The primary serving `slot`, `nil` when none does (the cluster is incomplete).
    public func primary(forSlot slot: Int) -> ClusterNode? {
        guard slot >= 0, slot < HashSlot.count else { return nil }
        let i = Int(owners[slot])
        return i >= 0 ? primaries[i] : nil
    }

    /// The primary serving `key`'s slot.
    public func primary(forKey key: String) -> ClusterNode? { primary(forSlot: HashSlot.of(key)) }

    /// Number of slots with no primary (0 for a complete cluster: every slot covered).
    public var uncoveredSlots: Int { owners.reduce(0) { $0 + ($1 < 0 ? 1 : 0) } }

    /// A `MOVED slot host:port` redirect: the slot now lives on `node` (Redis
    /// Cluster spec, "MOVED Redirection": update the slot, then refresh the map).
    public mutating func moved(slot: Int, to node: ClusterNode) {
        guard slot >= 0, slot < HashSlot.count else { return }
        assign(slot...slot, to: node)
    }

    private mutating func assign(_ slots: ClosedRange<Int>, to node: ClusterNode) {
        let lo = max(0, slots.lowerBound), hi = min(HashSlot.count - 1, slots.upperBound)
        guard lo <= hi else { return }
        let i: Int
        if let k = primaries.firstIndex(of: node) { i = k } else {
            primaries.append(node)
            i = primaries.count - 1
        }
        for s in lo...hi { owners[s] = Int16(i) }
        // Drop primaries left with no slot (after a MOVED of their last slot), keeping indices.
        let used = Set(owners.filter { $0 >= 0 })
        if used.count != primaries.count {
            var remap = [Int16](repeating: -1, count: primaries.count)
            var kept: [ClusterNode] = []
            for (k, n) in primaries.enumerated() where used.contains(Int16(k)) {
                remap[k] = Int16(kept.count)
                kept.append(n)
            }
            primaries = kept
            for s in 0..<owners.count where owners[s] >= 0 { owners[s] = remap[Int(owners[s])] }
        }
    }
}
