import RelayCore
import RelayLoop
import RelayEventStore

/// Finds the running generations of dead workers and takes them over, with or without
/// readers (docs/PROTOCOL.md §4.5, docs/DATA_MODEL.md §6.2). The worker renews its
/// heartbeat in `relay:instances` every `OrphanSweepPacing.heartbeatMs` and records the
/// generations it runs in its owned set (`InstanceRegistry`). Every sweep (jittered around
/// `sweepMs`) it lists lapsed heartbeats, picks one at random, reads up to `batch` ids of
/// its owned set and hands each to `OwnerLeases.adopt` (`Scripts.takeover`: atomic, so of
/// instances racing for one stream exactly one takes it; the others find its lease held),
/// forgets the handled ids, and removes the lapsed heartbeat once its set is empty. Redis
/// cost per worker: two commands a second, plus two per stream lifetime. Loop thread only.
final class OrphanSweeper {
    private let loop: EventLoop
    let registry: InstanceRegistry
    private let pacing: OrphanSweepPacing
    private let wallMs: () -> Int64
    private let metrics: Metrics
    private let outage: RedisOutageWatch
    private var heartbeatTimer: LoopTimer?
    private var sweepTimer: LoopTimer?
    /// Loop time the sweep in flight started, ms (`nil`: none).
    private var sweepStartedMs: UInt64?
    /// Heartbeats stopped: the worker handed its streams over or left.
    private var retired = false
    private var rng = SystemRandomNumberGenerator()

    /// Takes over (or ends) one stream; reports whether the sweep may forget it.
    var adopt: ((RequestID, @escaping (OwnerLeases.Adoption) -> Void) -> Void)?
    /// The scoped ids of the generations running here (written again when the heartbeat
    /// finds itself removed).
    var running: (() -> [String])?

    init(loop: EventLoop, registry: InstanceRegistry, pacing: OrphanSweepPacing = OrphanSweepPacing(), metrics: Metrics,
         outage: RedisOutageWatch, wallMs: @escaping () -> Int64) {
        self.outage = outage
        self.loop = loop
        self.registry = registry
        self.pacing = pacing
        self.metrics = metrics
        self.wallMs = wallMs
        heartbeatTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.beat() }
        heartbeatTimer?.schedule(afterMs: pacing.heartbeatMs)
        sweepTimer = LoopTimer(loop: loop) { [unowned self] in self.sweep() }
        sweepTimer?.schedule(afterMs: pacing.nextSweepDelayMs(unit: unit()))
    }

    private func unit() -> Double { Double(rng.next() >> 11) / Double(1 << 53) }

    /// The connection (re)connected: renew the heartbeat now and record the running generations.
    func connected() {
        guard !retired else { return }
        beat()
    }

    /// Stops the timers (worker stop).
    func stop() {
        heartbeatTimer?.cancel()
        sweepTimer?.cancel()
    }

    /// A generation started or was taken over here.
    func owns(_ id: RequestID) { if !retired { registry.own([id.value]) } }

    /// A generation ended here (not handed over: then the sweeps of others find it).
    func ended(_ id: RequestID) { registry.disown(id.value) }

    /// The drain is about to hand the remaining generations over: heartbeats stop and the
    /// owned set is kept (`leave` no longer removes it).
    func beginHandOver() {
        retired = true
        heartbeatTimer?.cancel()
    }

    /// The drain handed the remaining generations over (their leases dropped): the
    /// heartbeat lapses now, so the other instances' sweeps take them over at once.
    func retire() {
        beginHandOver()
        registry.retire()
    }

    /// The drain finished every generation here: the heartbeat and owned set go.
    func leave() {
        guard !retired else { return }
        retired = true
        heartbeatTimer?.cancel()
        registry.leave()
    }

    private func beat() {
        guard !retired else { return }
        let wall = wallMs()
        registry.heartbeat(expiryMs: pacing.heartbeatExpiry(wallMs: wall), nowMs: wall) { [self] r in
            guard case .success(true) = r, !self.retired else { return }
            // New, or lapsed while this worker stalled (sweeps may have forgotten some of its
            // streams, or removed it): record what runs here again.
            self.registry.own(self.running?() ?? [])
        }
    }

    private func sweep() {
        sweepTimer?.schedule(afterMs: pacing.nextSweepDelayMs(unit: unit()))
        let now = loop.nowMs
        // As for readers' lease checks: only once Redis has been up for a whole lease, so
        // after an outage every live worker has renewed its heartbeat and leases first.
        guard outage.state.leasesJudgeable(nowMs: now, leaseMs: UInt64(EventLog.leaseMs)) else { return }
        guard pacing.mayStart(nowMs: now, inFlightSinceMs: sweepStartedMs) else { return }
        sweepStartedMs = now
        let wall = wallMs()
        registry.lapsed(nowMs: wall, limit: 64) { [self] r in
            guard case .success(let names) = r, let dead = pacing.pick(names, me: registry.name, unit: unit()) else {
                return finished(startedMs: now)
            }
            registry.owned(by: dead, count: pacing.batch) { [self] r in
                guard case .success(let ids) = r else { return finished(startedMs: now) }
                guard !ids.isEmpty else {
                    registry.removeIfDrained(dead, nowMs: wall)
                    return finished(startedMs: now)
                }
                let batch = Array(ids.prefix(pacing.batch))
                var left = batch.count
                var handled: [String] = []
                for text in batch {
                    guard let id = Self.requestID(text) else {
                        handled.append(text)
                        left -= 1
                        continue
                    }
                    adopt?(id) { [self] outcome in
                        if case .handled = outcome {
                            handled.append(text)
                            metrics.add(.orphansSwept)
                        }
                        left -= 1
                        if left == 0 {
                            registry.forget(handled, of: dead)
                            finished(startedMs: now)
                        }
                    }
                }
                if left == 0 {
                    registry.forget(handled, of: dead)
                    finished(startedMs: now)
                }
            }
        }
    }

    private func finished(startedMs: UInt64) {
        if sweepStartedMs == startedMs { sweepStartedMs = nil }
    }

    /// A scoped id read back from an owned set (`<ownerHash>:<id>`).
    static func requestID(_ text: String) -> RequestID? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        guard let id = try? RequestID(validating: text[text.index(after: colon)...]) else { return nil }
        return id.scoped(by: String(text[..<colon]))
    }
}
