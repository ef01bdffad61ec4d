/// The pacing of the orphan sweep (docs/DATA_MODEL.md §6.2): how often a worker renews
/// its heartbeat in `relay:instances`, when its heartbeat counts as lapsed, when it
/// looks for lapsed instances, and how many of a lapsed instance's streams one sweep
/// handles. Pure: times are passed in, ms.
public struct OrphanSweepPacing: Sendable, Equatable {
    /// Heartbeat renewal period, ms (one `ZADD` per worker per period).
    public var heartbeatMs: UInt64
    /// How long a heartbeat holds, ms: a worker whose last renewal is older is dead. Above
    /// the owner lease (`EventLog.leaseMs`), so the leases of a dead worker's streams have
    /// lapsed by the time its heartbeat does and `Scripts.takeover` accepts them.
    public var heartbeatTTLMs: UInt64
    /// Mean sweep period, ms; each wait is drawn in [½, 1½) of it so the instances' sweeps
    /// spread out instead of meeting at the same instant.
    public var sweepMs: UInt64
    /// Streams of one lapsed instance one sweep handles at most (takeovers or endings):
    /// the rest wait for the next sweep, or for another instance's.
    public var batch: Int

    public init(heartbeatMs: UInt64 = 1_000, heartbeatTTLMs: UInt64 = 5_000, sweepMs: UInt64 = 1_000, batch: Int = 16) {
        self.heartbeatMs = heartbeatMs
        self.heartbeatTTLMs = heartbeatTTLMs
        self.sweepMs = sweepMs
        self.batch = batch
    }

    /// The heartbeat's expiry when renewed at wall time `wallMs` (unix ms): the member's score.
    public func heartbeatExpiry(wallMs: Int64) -> Int64 { wallMs + Int64(heartbeatTTLMs) }

    /// The wait before the next sweep, ms. `unit`: a random draw in [0, 1).
    public func nextSweepDelayMs(unit: Double) -> UInt64 {
        let u = min(max(unit, 0), 0.999_999)
        return max(1, UInt64(Double(sweepMs) * (0.5 + u)))
    }

    /// Which lapsed instance a sweep works on: one of `lapsed` (never `me`), chosen by the
    /// draw `unit` in [0, 1) so that instances sweeping at once mostly pick different ones
    /// and share the work; `nil` when none but `me` lapsed.
    public func pick(_ lapsed: [String], me: String, unit: Double) -> String? {
        let others = lapsed.filter { $0 != me }
        guard !others.isEmpty else { return nil }
        let u = min(max(unit, 0), 0.999_999)
        return others[Int(Double(others.count) * u)]
    }

    /// Whether a sweep whose previous one started at `lastStartMs` and has not finished
    /// may start at `nowMs`: a sweep waiting on Redis longer than a heartbeat TTL is
    /// given up (its replies may never come), so one lost reply does not stop the sweeps.
    public func mayStart(nowMs: UInt64, inFlightSinceMs: UInt64?) -> Bool {
        guard let since = inFlightSinceMs else { return true }
        return nowMs >= since + heartbeatTTLMs
    }
}
