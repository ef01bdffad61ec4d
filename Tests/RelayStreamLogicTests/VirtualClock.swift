/// A test clock for the loop-millisecond policies: time moves only when told.
struct VirtualClock {
    private(set) var nowMs: UInt64 = 1_000
    mutating func advance(_ ms: UInt64) { nowMs += ms }
}
