import CLibevent
import Foundation
import RelayCore
import RelayLoop

/// Monotonic milliseconds.
func monoMs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
}

/// Drives the single libevent loop of the load generator in sequential steps
/// (`spin(until:)`), so scenarios read top to bottom.
final class Runner {
    let loop: EventLoop
    let opts: Options
    let target: Target
    var sources: SourceAddresses
    private var tick: LoopTimer?
    var results: [[String: Any]] = []

    init(opts: Options, target: Target) throws {
        loop = try EventLoop()
        self.opts = opts
        self.target = target
        sources = SourceAddresses(count: opts.sourceAddresses, connections: 1)
        // A 5 ms tick so `spin` wakes up even when no socket is active.
        tick = LoopTimer(loop: loop, repeating: true) {}
        tick?.schedule(afterMs: 5)
    }

    /// Runs the loop until `cond` holds or `timeoutMs` passes; returns `cond()`.
    @discardableResult
    func spin(timeoutMs: UInt64, until cond: () -> Bool = { false }) -> Bool {
        let deadline = monoMs() + timeoutMs
        while !cond() {
            if monoMs() >= deadline { return cond() }
            event_base_loop(loop.base, EVLOOP_ONCE)
        }
        return true
    }

    /// Opens subscribers `subs` with `request(sub)` at `opts.connectRate` per second.
    func ramp(_ subs: [Subscriber], request: (Subscriber) -> String) {
        let batch = max(1, opts.connectRate / 100)  // every 10 ms
        var i = 0
        let dst = target.dst
        while i < subs.count {
            let end = min(subs.count, i + batch)
            for s in subs[i..<end] { s.open(loop: loop, src: sources.take(), dst: dst, request: request(s)) }
            i = end
            spin(timeoutMs: 10)
        }
    }

    func log(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    /// Prints a result line and keeps it for `--json-out`.
    func emit(_ r: [String: Any]) {
        var r = r
        r["target"] = target.kind.rawValue
        if let label = opts.label { r["label"] = label }
        results.append(r)
        if let data = try? JSONSerialization.data(withJSONObject: r, options: [.sortedKeys]) {
            FileHandle.standardOutput.write(Data(("RESULT " + String(decoding: data, as: UTF8.self) + "\n").utf8))
        }
        if let path = opts.jsonOut, let data = try? JSONSerialization.data(withJSONObject: r, options: [.sortedKeys]) {
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            if let h = FileHandle(forWritingAtPath: path) {
                h.seekToEndOfFile()
                h.write(data + Data("\n".utf8))
                h.closeFile()
            }
        }
    }

    static func newID(_ i: Int) -> String {
        let r = UInt64.random(in: 0...UInt64.max)
        return "bench-\(String(r, radix: 16))-\(i)"
    }

    func serverRSS() -> Int? { opts.serverPids.isEmpty ? nil : Proc.rssBytes(opts.serverPids) }

    // MARK: stream / fanout

    struct FlowResult {
        var streams: Int
        var subscribers: Int
        var deliveriesPerSec: Double
        var expectedPerSec: Double
        var p50: Double?, p99: Double?, p999: Double?, maxMs: Double?
        var lost: Int, duplicates: Int
        /// SSE `delta` events received, and the deltas among them that arrived merged
        /// (several in one event: the relay's coalescing for a backed-up client).
        var deltaEvents: Int, mergedDeltas: Int
        /// SSE part events received (the part-heavy answer's).
        var partEvents: Int
        /// Tail deltas not received when the run stopped waiting (not loss: see `RunStats.late`).
        var late: Int
        var serverCPU: Double?, redisCPU: Double?, serverRSS: Int?
        /// The server's CPU in the kernel, % of one core (part of `serverCPU`).
        var serverKernelCPU: Double?
        var errors: Int
        var benchCPU: Double
        /// The machine's CPU time stolen by the hypervisor, % of all cores (`StolenTimeWindow`).
        var stealPercent: Double?
        var ok: Bool { lost == 0 && duplicates == 0 && errors == 0 && late == 0 }
    }

    /// `streams` streams × `perStream` subscribers at `rate` tokens/s, measured for
    /// `measureS` seconds once every subscriber is connected.
    func flow(streams: Int, perStream: Int, rate: Double, measureS: Double) -> FlowResult {
        let stats = RunStats()
        let total = streams * perStream
        sources = SourceAddresses(count: opts.sourceAddresses, connections: total)
        let rampS = Double(total) / Double(opts.connectRate)
        let ids = (0..<streams).map { Runner.newID($0) }
        // Stream-major order: a stream's creator (relay POST), then at once its other
        // subscribers (relay: resumes with Last-Event-ID 0), so they join near the start
        // of the stream instead of replaying seconds of history.
        var subs: [Subscriber] = []
        for s in 0..<streams {
            for k in 0..<perStream {
                let sub = Subscriber(stream: s, id: ids[s], stats: stats)
                sub.creator = k == 0
                subs.append(sub)
            }
        }
        var failures: [String: Int] = [:]
        let dst = target.dst
        let tokens: Int
        var schedule: PublishSchedule?
        var publishers: [Publisher] = []
        let started = monoMs()
        // Relay: the generation starts with the POST, so it must outlast the ramp.
        // nchan: publishing starts once everybody is connected.
        switch target.kind {
        case .relay: tokens = Int((rampS + measureS + 3) * rate)
        case .nchan: tokens = Int((measureS + 3) * rate)
        }
        var retries: [Subscriber] = []
        for s in subs {
            s.onFailed = { sub, why in
                failures[why, default: 0] += 1
                // A resume that raced the stream's creation: retry once the POST is in.
                if why == "HTTP 404" && !sub.finished { retries.append(sub) }
            }
        }
        let request: (Subscriber) -> String = { [target] s in
            let creator = target.kind == .relay && s.creator
            return target.subscribeRequest(id: s.id, create: creator, maxTokens: tokens, lastEventID: target.kind == .relay && !creator ? "0" : nil)
        }
        log("  connecting \(total) subscribers (\(opts.connectRate)/s from \(sources.description))…")
        ramp(subs, request: request)
        var connectDeadline = monoMs() + UInt64(max(10.0, rampS * 2) * 1000)
        while monoMs() < connectDeadline {
            if !retries.isEmpty {
                let again = retries
                retries.removeAll()
                stats.httpErrors[404, default: 0] -= again.count
                failures["HTTP 404", default: 0] -= again.count
                for s in again { s.open(loop: loop, src: sources.take(), dst: dst, request: request(s)) }
            }
            if subs.allSatisfy({ $0.connected || $0.finished }) { break }
            spin(timeoutMs: 20)
        }
        connectDeadline = 0
        let connected = subs.filter { $0.connected }.count
        log("  \(connected)/\(total) connected after \(fmt(Double(monoMs() - started) / 1000)) s")
        let t0 = nowMicros()
        stats.measureFromMicros = t0
        stats.windowStart = t0
        stats.windowEnd = t0 + UInt64(measureS * 1_000_000)
        if target.kind == .nchan {
            for s in 0..<streams {
                if let p = Publisher(loop: loop, src: sources.take(), target: target, channel: ids[s]) { publishers.append(p) }
            }
            schedule = PublishSchedule(loop: loop, publishers: publishers, rate: rate, tokens: tokens, answer: target.answer)
            schedule?.start()
        }
        var serverCPU = CPUWindow(opts.serverPids)
        var redisCPU = CPUWindow(opts.redisPid.map { [$0] } ?? [])
        var steal = StolenTimeWindow()
        serverCPU.start()
        redisCPU.start()
        steal.begin()
        let self0 = selfCPUSeconds()
        let wall0 = monoMs()
        spin(timeoutMs: UInt64(measureS * 1000))
        let benchCPU = (selfCPUSeconds() - self0) / (Double(monoMs() - wall0) / 1000) * 100
        let sSplit = serverCPU.split()
        let rCPU = redisCPU.percent()
        let stolen = steal.percent()
        let rss = serverRSS()
        // Let every stream finish (done) so losses at the end are counted. Wait for
        // every subscriber with an open connection, including those still connecting
        // or replaying (waiting only for the connected ones would count the tail of
        // late joiners as lost).
        let finishBy = UInt64((Double(tokens) / rate + 15) * 1000)
        spin(timeoutMs: finishBy) { subs.allSatisfy { $0.finished || $0.conn == nil } && (schedule == nil || schedule!.finished == streams) }
        let finished = subs.filter { $0.finished }.count
        log("  \(finished)/\(total) finished (done received) after \(fmt(Double(monoMs() - started) / 1000)) s")
        spin(timeoutMs: 200)
        for s in subs { s.settle(tokens: target.answer.stamps(events: tokens)); s.drop() }
        schedule?.stop()
        let pubErrors = schedule?.totalErrors ?? 0
        for p in publishers { p.close() }
        let httpErrors = stats.httpErrors.values.reduce(0, +)
        if !failures.isEmpty { log("  failures: \(failures.filter { $0.value > 0 })") }
        if pubErrors > 0 { log("  nchan publish errors: \(pubErrors)") }
        return FlowResult(streams: streams, subscribers: total,
                          deliveriesPerSec: Double(stats.receivedInWindow) / measureS,
                          expectedPerSec: Double(total) * rate,
                          p50: stats.latency.quantileMs(0.5), p99: stats.latency.quantileMs(0.99),
                          p999: stats.latency.quantileMs(0.999), maxMs: stats.latency.quantileMs(1.0),
                          lost: stats.lost, duplicates: stats.duplicates,
                          deltaEvents: stats.deltaEvents, mergedDeltas: stats.mergedDeltas, partEvents: stats.partEvents, late: stats.late,
                          serverCPU: sSplit?.total, redisCPU: rCPU, serverRSS: rss, serverKernelCPU: sSplit?.kernel,
                          errors: httpErrors + stats.connectFailures + stats.errorEvents + pubErrors + stats.closedEarly,
                          benchCPU: benchCPU, stealPercent: stolen)
    }

    func report(_ scenario: String, _ r: FlowResult, extra: [String: Any] = [:]) {
        // Distinct events per second: every subscriber of a stream gets each of its events.
        let eventsPerSec = r.deliveriesPerSec / Double(max(1, r.subscribers / max(1, r.streams)))
        let serverPerDelivery = cpuMicrosPerUnit(cpuPercent: r.serverCPU, perSecond: r.deliveriesPerSec)
        let serverKernelPerDelivery = cpuMicrosPerUnit(cpuPercent: r.serverKernelCPU, perSecond: r.deliveriesPerSec)
        let redisPerEvent = cpuMicrosPerUnit(cpuPercent: r.redisCPU, perSecond: eventsPerSec)
        log("  → \(Int(r.deliveriesPerSec)) deliveries/s (ideal \(Int(r.expectedPerSec))), latency p50 \(fmt(r.p50, 2)) ms p99 \(fmt(r.p99, 2)) ms p99.9 \(fmt(r.p999, 2)) ms max \(fmt(r.maxMs, 1)) ms, lost \(r.lost), late \(r.late), dup \(r.duplicates), errors \(r.errors), merged \(r.mergedDeltas) deltas (\(r.deltaEvents) delta events, \(r.partEvents) part events), server CPU \(fmt(r.serverCPU))%, RSS \(r.serverRSS.map { "\($0 / 1_048_576) MiB" } ?? "n/a"), redis CPU \(fmt(r.redisCPU))%, load generator CPU \(fmt(r.benchCPU))%, stolen \(fmt(r.stealPercent))% of the machine; per event: server \(fmt(serverPerDelivery, 2)) µs/delivery (kernel \(fmt(serverKernelPerDelivery, 2))), redis \(fmt(redisPerEvent, 2)) µs/event")
        var d: [String: Any] = [
            "scenario": scenario, "streams": r.streams, "subscribers": r.subscribers,
            "deliveries_per_s": r.deliveriesPerSec, "ideal_per_s": r.expectedPerSec,
            "lost": r.lost, "late": r.late, "duplicates": r.duplicates, "errors": r.errors, "ok": r.ok,
            "delta_events": r.deltaEvents, "merged_deltas": r.mergedDeltas, "part_events": r.partEvents,
            "model": target.answer.rawValue,
        ]
        if let v = r.p50 { d["p50_ms"] = v }
        if let v = r.p99 { d["p99_ms"] = v }
        if let v = r.p999 { d["p999_ms"] = v }
        if let v = r.maxMs { d["max_ms"] = v }
        if let v = r.serverCPU { d["server_cpu_pct"] = v }
        if let v = r.redisCPU { d["redis_cpu_pct"] = v }
        if let v = r.serverRSS { d["server_rss_bytes"] = v }
        d["bench_cpu_pct"] = r.benchCPU
        if let v = r.stealPercent { d["steal_pct"] = v }
        d["events_per_s"] = eventsPerSec
        if let v = serverPerDelivery { d["server_cpu_us_per_delivery"] = v }
        if let v = serverKernelPerDelivery { d["server_kernel_cpu_us_per_delivery"] = v }
        if let v = redisPerEvent { d["redis_cpu_us_per_event"] = v }
        for (k, v) in extra { d[k] = v }
        emit(d)
    }

    /// `stream`: N generations × 1 subscriber, N stepped; stops after the first step
    /// that misses p99 < 50 ms with nothing lost.
    func streamScenario() -> Bool {
        let steps = opts.steps
        log("scenario stream target \(target.kind.rawValue): model \(target.answer.rawValue), N steps \(steps), \(opts.rate) tokens/s, \(opts.duration) s measured per step, connect \(opts.connectRate)/s, heartbeat as configured on the server")
        var best = 0
        var allOK = true
        for n in steps {
            log("stream N=\(n)")
            let r = flow(streams: n, perStream: 1, rate: opts.rate, measureS: opts.duration)
            let pass = r.ok && (r.p99 ?? .infinity) < 50
            if pass { best = n }
            allOK = allOK && r.ok   // nothing lost, late, duplicated or failed at any step run
            report("stream", r, extra: ["n": n, "rate": opts.rate, "duration_s": opts.duration, "pass": pass])
            if !pass && !opts.continueAfterFail { break }
            spin(timeoutMs: 1000)
        }
        log("stream: largest N with p99 < 50 ms and nothing lost: \(best)")
        emit(["scenario": "stream-summary", "best_n": best, "steps": steps, "rate": opts.rate, "duration_s": opts.duration])
        return allOK
    }

    /// `fanout`: `streams` streams × each of `fanouts` subscribers at `rate`.
    func fanoutScenario() -> Bool {
        log("scenario fanout target \(target.kind.rawValue): \(opts.streams) streams × \(opts.fanouts) subscribers, \(opts.rate) tokens/s, \(opts.duration) s measured, connect \(opts.connectRate)/s")
        var ok = true
        for k in opts.fanouts {
            log("fanout \(opts.streams) × \(k)")
            let r = flow(streams: opts.streams, perStream: k, rate: opts.rate, measureS: opts.duration)
            ok = ok && r.ok
            report("fanout", r, extra: ["per_stream": k, "rate": opts.rate, "duration_s": opts.duration])
            spin(timeoutMs: 1000)
        }
        return ok
    }

    // MARK: idle

    /// `idle`: `streams × perStream` subscribers that only get heartbeats, held for
    /// `holdS`: relay memory per connection (RSS delta) and kernel memory.
    func idleScenario() -> Bool {
        let streams = opts.streams
        let per = max(1, opts.connections / streams)
        let total = streams * per
        log("scenario idle target \(target.kind.rawValue): \(total) idle subscribers (\(streams) streams × \(per)), held \(opts.hold) s (≥ 1 heartbeat interval), connect \(opts.connectRate)/s")
        let stats = RunStats()
        sources = SourceAddresses(count: opts.sourceAddresses, connections: total)
        let ids = (0..<streams).map { Runner.newID($0) }
        var subs: [Subscriber] = []
        for _ in 0..<per { for s in 0..<streams { subs.append(Subscriber(stream: s, id: ids[s], stats: stats)) } }
        var failures: [String: Int] = [:]
        for s in subs { s.onFailed = { _, why in failures[why, default: 0] += 1 } }
        spin(timeoutMs: 500)
        let rss0 = serverRSS()
        let slab0 = Proc.slabBytes()
        let tcp0 = Proc.tcpBufferBytes()
        // Relay: the creators first (their streams stay idle: the server runs with a
        // near-zero token rate), then the resumes.
        ramp(Array(subs[0..<streams])) { [target] s in
            target.subscribeRequest(id: s.id, create: target.kind == .relay, maxTokens: 1, lastEventID: nil)
        }
        spin(timeoutMs: 5000) { subs[0..<streams].allSatisfy { $0.connected } }
        ramp(Array(subs[streams...])) { [target] s in
            target.subscribeRequest(id: s.id, create: false, maxTokens: 1, lastEventID: target.kind == .relay ? "0" : nil)
        }
        spin(timeoutMs: UInt64(max(10.0, Double(total) / Double(opts.connectRate) * 2) * 1000)) { subs.allSatisfy { $0.connected } }
        let connected = subs.filter { $0.connected }.count
        log("  \(connected)/\(total) connected; holding \(opts.hold) s")
        var serverCPU = CPUWindow(opts.serverPids)
        serverCPU.start()
        spin(timeoutMs: UInt64(opts.hold * 1000))
        let rss1 = serverRSS()
        let slab1 = Proc.slabBytes()
        let tcp1 = Proc.tcpBufferBytes()
        let cpu = serverCPU.percent()
        let withHeartbeat = subs.filter { $0.heartbeats > 0 }.count
        let stillOpen = subs.filter { $0.connected }.count
        for s in subs { s.drop() }
        spin(timeoutMs: 500)
        let perConn = (rss0 != nil && rss1 != nil && connected > 0) ? Double(rss1! - rss0!) / Double(connected) : nil
        let slabPer = connected > 0 ? Double(slab1 - slab0) / Double(connected) : 0
        let tcpPer = connected > 0 ? Double(tcp1 - tcp0) / Double(connected) : 0
        if !failures.isEmpty { log("  failures: \(failures)") }
        log("  → server RSS \(rss0.map { "\($0 / 1024)" } ?? "n/a") → \(rss1.map { "\($0 / 1024)" } ?? "n/a") KiB: \(fmt(perConn.map { $0 / 1024 }, 2)) KiB per connection; kernel slab Δ \(fmt(slabPer / 1024, 2)) KiB and TCP buffers Δ \(fmt(tcpPer / 1024, 2)) KiB per connection (system-wide: both ends of the loopback connection); \(withHeartbeat)/\(total) got a heartbeat, \(stillOpen) still open; server CPU \(fmt(cpu, 1))%")
        var d: [String: Any] = ["scenario": "idle", "connections": total, "connected": connected, "hold_s": opts.hold,
                                "with_heartbeat": withHeartbeat, "still_open": stillOpen,
                                "kernel_slab_per_conn_bytes": slabPer, "tcp_buffers_per_conn_bytes": tcpPer]
        if let perConn { d["rss_per_conn_bytes"] = perConn }
        if let rss0 { d["rss_before_bytes"] = rss0 }
        if let rss1 { d["rss_after_bytes"] = rss1 }
        if let cpu { d["server_cpu_pct"] = cpu }
        d["ok"] = connected == total && stillOpen == total && withHeartbeat == total
        emit(d)
        return connected == total && stillOpen == total && withHeartbeat == total
    }

    // MARK: resume storm

    /// `resume-storm`: `streams` clients partway through `streams` streams drop at once,
    /// stay away `offline` s, then reconnect at once with `Last-Event-ID`.
    func resumeStormScenario() -> Bool {
        let streams = opts.streams
        let rate = opts.rate
        log("scenario resume-storm target \(target.kind.rawValue): \(streams) clients on \(streams) streams at \(rate) tokens/s; drop all after \(opts.warm) s, offline \(opts.offline) s, reconnect at once with Last-Event-ID")
        let stats = RunStats()
        sources = SourceAddresses(count: opts.sourceAddresses, connections: streams * 2)
        let ids = (0..<streams).map { Runner.newID($0) }
        let subs = (0..<streams).map { Subscriber(stream: $0, id: ids[$0], stats: stats) }
        var failures: [String: Int] = [:]
        for s in subs { s.onFailed = { _, why in failures[why, default: 0] += 1 } }
        let rampS = Double(streams) / Double(opts.connectRate)
        let tokens = Int((rampS + opts.warm + opts.offline + 30) * rate)
        ramp(subs) { [target] s in target.subscribeRequest(id: s.id, create: target.kind == .relay, maxTokens: tokens, lastEventID: nil) }
        spin(timeoutMs: 10_000) { subs.allSatisfy { $0.connected } }
        var publishers: [Publisher] = []
        var schedule: PublishSchedule?
        if target.kind == .nchan {
            for s in 0..<streams {
                if let p = Publisher(loop: loop, src: sources.take(), target: target, channel: ids[s]) { publishers.append(p) }
            }
            schedule = PublishSchedule(loop: loop, publishers: publishers, rate: rate, tokens: tokens, answer: target.answer)
            schedule?.start()
        }
        stats.measureFromMicros = nowMicros()
        spin(timeoutMs: UInt64(opts.warm * 1000))
        let before = subs.map { $0.lastN }
        for s in subs { s.drop() }
        log("  dropped \(streams) clients at n ≈ \(before.sorted()[before.count / 2]) (median); offline \(opts.offline) s")
        spin(timeoutMs: UInt64(opts.offline * 1000))
        // Redis CPU sampled every 100 ms around the storm.
        var samples: [(UInt64, Double)] = []
        let rp = opts.redisPid
        let sampler = LoopTimer(loop: loop, repeating: true) {
            if let rp, let c = Proc.cpuSeconds(rp) { samples.append((monoMs(), c)) }
        }
        if let rp, let c = Proc.cpuSeconds(rp) { samples.append((monoMs(), c)) }
        sampler.schedule(afterMs: 100)
        var serverCPU = CPUWindow(opts.serverPids)
        serverCPU.start()
        let t0 = nowMicros()
        let m0 = monoMs()
        let dst = target.dst
        for s in subs {
            s.stormT0 = t0
            let req = target.subscribeRequest(id: s.id, create: false, maxTokens: tokens, lastEventID: s.parser.lastEventId)
            s.open(loop: loop, src: sources.take(), dst: dst, request: req)
        }
        let allIn = spin(timeoutMs: 30_000) { subs.allSatisfy { $0.caughtUpMicros != nil || $0.finished } }
        let stormMs = Double(monoMs() - m0)
        spin(timeoutMs: 1000)
        sampler.cancel()
        let sCPU = serverCPU.percent()
        let catchUps = subs.compactMap { $0.caughtUpMicros }.sorted()
        func q(_ p: Double) -> Double? {
            guard !catchUps.isEmpty else { return nil }
            return Double(catchUps[min(catchUps.count - 1, Int(Double(catchUps.count) * p))]) / 1000
        }
        var peak = 0.0
        for i in 1..<max(1, samples.count) {
            let dt = Double(samples[i].0 - samples[i - 1].0) / 1000
            if dt > 0 { peak = max(peak, (samples[i].1 - samples[i - 1].1) / dt * 100) }
        }
        let redisCPUs = samples.count > 1 ? (samples.last!.1 - samples.first!.1) : 0
        for s in subs { s.drop() }
        schedule?.stop()
        for p in publishers { p.close() }
        let httpErrors = stats.httpErrors.values.reduce(0, +)
        if !failures.isEmpty { log("  failures: \(failures)") }
        let replayed = zip(subs, before).map { $0.lastN - $1 }.reduce(0, +)
        log("  → \(catchUps.count)/\(streams) caught up in \(fmt(stormMs / 1000, 2)) s: catch-up p50 \(fmt(q(0.5), 1)) ms p99 \(fmt(q(0.99), 1)) ms max \(fmt(q(1.0), 1)) ms; gaps \(stats.lost), duplicates \(stats.duplicates), errors \(httpErrors + stats.connectFailures + stats.errorEvents); \(replayed) events delivered after reconnect; redis CPU peak \(fmt(peak))% (100 ms windows), \(fmt(redisCPUs, 2)) CPU-s during the storm; server CPU \(fmt(sCPU))%")
        var d: [String: Any] = ["scenario": "resume-storm", "clients": streams, "rate": rate, "offline_s": opts.offline,
                                "caught_up": catchUps.count, "gaps": stats.lost, "duplicates": stats.duplicates,
                                "errors": httpErrors + stats.connectFailures + stats.errorEvents,
                                "storm_s": stormMs / 1000, "redis_cpu_peak_pct": peak, "redis_cpu_s": redisCPUs,
                                "all_caught_up": allIn]
        if let v = q(0.5) { d["p50_ms"] = v }
        if let v = q(0.99) { d["p99_ms"] = v }
        if let v = q(1.0) { d["max_ms"] = v }
        if let v = sCPU { d["server_cpu_pct"] = v }
        let ok = allIn && stats.lost == 0 && stats.duplicates == 0 && httpErrors == 0
        d["ok"] = ok
        emit(d)
        return ok
    }
}
