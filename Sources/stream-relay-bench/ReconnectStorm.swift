import Foundation
import RelayLoop

/// `storm`: the reconnect storm a dead instance causes. Answers are generated on the
/// instances that stay up (their `POST`s sent straight to `--create-ports`); readers
/// follow them through the load balancer (`--port`), which spreads them over every
/// instance; then `--kill-pid` (one instance) gets `SIGKILL` while the answers are live.
/// Its readers reconnect through the load balancer as the kits do (`StormReader`).
///
/// Reported: the time from the kill until each affected reader is caught up (p50, p99,
/// max), Redis CPU before and during the storm (`/proc/<pid>/stat`, 100 ms samples), the
/// surviving instances' CPU, the delivery latency and inter-event gap p99 of the readers
/// that were not affected, before the kill and during the storm, and every reader's lost
/// and duplicated events (SSE `id` and the producer's index): the run fails on any.
extension Runner {
    func stormScenario() -> Bool {
        let answers = opts.streams
        let readersN = max(opts.connections, answers)
        let rate = opts.rate
        guard let killPid = opts.killPid, !opts.createPorts.isEmpty else {
            log("storm needs --kill-pid (the instance to SIGKILL) and --create-ports (the instances that generate)")
            return false
        }
        log("scenario storm: \(answers) answers at \(rate) tokens/s generated on ports \(opts.createPorts), \(readersN) readers through the load balancer at \(target.host):\(target.port); SIGKILL pid \(killPid) \(opts.warm) s after every reader is in; kit reconnect policy (first reconnection after a drop: full jitter 0–1 s; 2nd and 3rd in a row: 1 s + 0–250 ms; 502/503/504: max(Retry-After, 1 s) + 0–250 ms)")
        sources = SourceAddresses(count: opts.sourceAddresses, connections: readersN * 2 + answers)
        let stats = StormStats()
        let ids = (0..<answers).map { Runner.newID($0) }
        // The generations must outlast the setup, the warm-up and the storm (`--after` s of
        // live answer after the kill), then end with `done`.
        // Setup: the connect phases at `--connect-rate`, with room for them to take twice that.
        let setupS = Double(answers + readersN) / Double(opts.connectRate) * 2 + 5
        let tokens = Int(((setupS + opts.warm + opts.after) * rate).rounded(.up))
        let started = monoMs()

        // 1. The generations, alternating over the surviving instances. Each creator's
        // connection is closed once its response starts: the generation runs on.
        var created = 0
        var createFailures: [String: Int] = [:]
        var creators: [HTTPConnection] = []
        let batch = max(1, opts.connectRate / 100)
        var i = 0
        while i < answers {
            for k in i..<min(answers, i + batch) {
                var t = target
                t.port = opts.createPorts[k % opts.createPorts.count]
                guard let c = HTTPConnection(loop: loop, src: sources.take(), dst: t.dst) else {
                    createFailures["connect", default: 0] += 1
                    continue
                }
                c.onHead = { [unowned c] status, _ in
                    if status == 200 { created += 1 } else { createFailures["HTTP \(status)", default: 0] += 1 }
                    c.close()
                }
                c.onClose = { why in createFailures[why ?? "closed", default: 0] += 1 }
                c.send(t.subscribeRequest(id: ids[k], create: true, maxTokens: tokens, lastEventID: nil))
                creators.append(c)
            }
            i += batch
            spin(timeoutMs: 10)
        }
        spin(timeoutMs: 10_000) { created + createFailures.values.reduce(0, +) >= answers }
        creators.removeAll()
        log("  \(created)/\(answers) answers started (\(tokens) tokens each) after \(fmt(Double(monoMs() - started) / 1000)) s\(createFailures.isEmpty ? "" : "; failures \(createFailures)")")
        guard created == answers else { return false }

        // 2. The readers, reader k on answer k mod answers, through the load balancer.
        let readers = (0..<readersN).map {
            StormReader(index: $0, id: ids[$0 % answers], loop: loop, target: target, sources: sources, stats: stats)
        }
        var killAt: UInt64 = .max
        var before = LatencyHistogram(), beforeGaps = LatencyHistogram()
        var during: [(reader: Int32, latency: UInt32, gap: UInt32)] = []
        var beforeFrom: UInt64 = .max
        var duringTo: UInt64 = .max
        for r in readers {
            r.onDelta = { r, latency, gap, now in
                if now >= beforeFrom && now < killAt {
                    before.record(latency)
                    if let gap { beforeGaps.record(gap) }
                } else if now >= killAt && now < duringTo {
                    during.append((Int32(r.index), UInt32(min(latency, UInt64(UInt32.max))), UInt32(min(gap ?? UInt64(UInt32.max), UInt64(UInt32.max)))))
                }
            }
        }
        log("  connecting \(readersN) readers (\(opts.connectRate)/s from \(sources.description))…")
        i = 0
        while i < readersN {
            for r in readers[i..<min(readersN, i + batch)] { r.start() }
            i += batch
            spin(timeoutMs: 10)
        }
        spin(timeoutMs: 20_000) { readers.allSatisfy { $0.connected || $0.failed != nil || $0.finished } }
        let connected = readers.filter { $0.connected }.count
        log("  \(connected)/\(readersN) readers connected after \(fmt(Double(monoMs() - started) / 1000)) s; warm \(opts.warm) s")
        guard connected == readersN else {
            log("  failures: \(stats.failures), HTTP \(stats.httpErrors), drops \(stats.drops)")
            for r in readers { r.close() }
            return false
        }
        // Settle (replays from 0 done), then the last `warm` s before the kill are "before".
        spin(timeoutMs: 1000)
        beforeFrom = nowMicros()
        var redisSamples: [(UInt64, Double)] = []
        let rp = opts.redisPid
        let sampler = LoopTimer(loop: loop, repeating: true) {
            if let rp, let c = Proc.cpuSeconds(rp) { redisSamples.append((nowMicros(), c)) }
        }
        if let rp, let c = Proc.cpuSeconds(rp) { redisSamples.append((nowMicros(), c)) }
        sampler.schedule(afterMs: 100)
        var serverBefore = CPUWindow(opts.serverPids)
        var lbBefore = CPUWindow(opts.lbPids)
        serverBefore.start()
        lbBefore.start()
        let selfBefore0 = (selfCPUSeconds(), monoMs())
        let cmdWarm = opts.redisURL.map { RedisCommandStats.read(url: $0) } ?? [:]
        let warmFrom = nowMicros()
        spin(timeoutMs: UInt64(max(1, opts.warm - 1) * 1000))
        let cmdBefore = opts.redisURL.map { RedisCommandStats.read(url: $0) } ?? [:]
        let warmS = Double(nowMicros() - warmFrom) / 1e6
        let serverBeforePct = serverBefore.percent()
        let lbBeforePct = lbBefore.percent()
        let dropsBefore = stats.drops.values.reduce(0, +)
        let benchBeforePct = (selfCPUSeconds() - selfBefore0.0) / (Double(monoMs() - selfBefore0.1) / 1000) * 100

        // 3. The kill.
        var serverDuring = CPUWindow(opts.serverPids)
        var lbDuring = CPUWindow(opts.lbPids)
        var steal = StolenTimeWindow()
        serverDuring.start()
        lbDuring.start()
        steal.begin()
        let selfDuring0 = (selfCPUSeconds(), monoMs())
        killAt = nowMicros()
        for r in readers { r.killAt = killAt }
        guard kill(killPid, SIGKILL) == 0 else {
            log("  kill(\(killPid), SIGKILL): \(String(cString: strerror(errno)))")
            for r in readers { r.close() }
            return false
        }
        log("  SIGKILL \(killPid) at +\(fmt(Double(monoMs() - started) / 1000)) s")
        // Every affected reader drops at once (the instance's sockets close with it); wait
        // until each has caught up or given up, at least 3 s (the storm's window), at most `after`.
        let m0 = monoMs()
        let allIn = spin(timeoutMs: UInt64(opts.after * 1000)) {
            monoMs() - m0 >= 3000 && readers.allSatisfy { !$0.affected || $0.caughtUpAt != nil || $0.failed != nil }
        }
        let affected = readers.filter { $0.affected }
        let catchUps = affected.compactMap { r in r.caughtUpAt.map { $0 > killAt ? $0 - killAt : 0 } }.sorted()
        func sinceKill(_ v: [UInt64?]) -> [UInt64] { v.compactMap { $0.map { $0 > killAt ? $0 - killAt : 0 } }.sorted() }
        let dropsSeen = sinceKill(affected.map { $0.droppedAt })
        let lateness = affected.compactMap { r -> UInt64? in
            guard let due = r.firstReconnectDue, let sent = r.firstReconnectSent else { return nil }
            return sent > due ? sent - due : 0
        }.sorted()
        let reconnects = sinceKill(affected.map { $0.resumedFrom })
        let accepted = sinceKill(affected.map { $0.resumedAt })
        let firstLive = sinceKill(affected.map { $0.firstLiveAt })
        let lastCatchUp = catchUps.last.map { killAt + $0 } ?? nowMicros()
        duringTo = max(lastCatchUp, killAt + 1_000_000)
        let serverDuringSplit = serverDuring.split()
        let lbDuringPct = lbDuring.percent()
        let stolen = steal.percent()
        let benchDuringPct = (selfCPUSeconds() - selfDuring0.0) / (Double(max(1, monoMs() - selfDuring0.1)) / 1000) * 100
        let cmdAfter = opts.redisURL.map { RedisCommandStats.read(url: $0) } ?? [:]
        // The storm's window for the command counts runs to that `INFO`.
        let cmdS = Double(nowMicros() - killAt) / 1e6
        sampler.cancel()
        let waiting = readers.filter { if case .waiting = $0.policy.state { return true } else { return false } }.count
        let connecting = readers.filter { if case .connecting = $0.policy.state { return true } else { return false } }.count
        let behind = readers.filter { $0.affected && $0.connected && $0.caughtUpAt == nil }.count
        if !allIn { log("  not all caught up after \(opts.after) s: \(waiting) waiting to reconnect, \(connecting) connecting, \(behind) connected but not caught up") }

        // 4. Let every answer end (`done`), so each reader's tail is checked too.
        let finishBy = UInt64((Double(tokens) / rate + 20) * 1000)
        spin(timeoutMs: finishBy) { readers.allSatisfy { $0.finished || $0.failed != nil } }
        let finished = readers.filter { $0.finished }.count
        let incomplete = readers.filter { $0.lastN != target.answer.stamps(events: tokens) }.count
        log("  \(finished)/\(readersN) readers got done after \(fmt(Double(monoMs() - started) / 1000)) s")
        for r in readers { r.close() }

        // Figures.
        func q(_ v: [UInt64], _ p: Double) -> Double? {
            guard !v.isEmpty else { return nil }
            return Double(v[min(v.count - 1, Int(Double(v.count) * p))]) / 1000
        }
        var duringLat = LatencyHistogram(), duringGaps = LatencyHistogram()
        for d in during where !readers[Int(d.reader)].affected && d.latency != UInt32.max {
            duringLat.record(UInt64(d.latency))
            if d.gap != UInt32.max { duringGaps.record(UInt64(d.gap)) }
        }
        func redisPercent(from: UInt64, to: UInt64) -> (avg: Double?, peak: Double?, seconds: Double?) {
            let s = redisSamples.filter { $0.0 >= from && $0.0 <= to }
            guard s.count > 1 else { return (nil, nil, nil) }
            var peak = 0.0
            for k in 1..<s.count {
                let dt = Double(s[k].0 - s[k - 1].0) / 1e6
                if dt > 0 { peak = max(peak, (s[k].1 - s[k - 1].1) / dt * 100) }
            }
            let cpu = s.last!.1 - s.first!.1
            return (cpu / (Double(s.last!.0 - s.first!.0) / 1e6) * 100, peak, cpu)
        }
        // The sample just before the kill opens the storm's window.
        let stormFrom = redisSamples.last { $0.0 <= killAt }?.0 ?? killAt
        let redisBefore = redisPercent(from: beforeFrom, to: killAt)
        let redisStorm = redisPercent(from: stormFrom, to: duringTo + 100_000)
        let attempts = affected.map { $0.attempts }
        let refusals = affected.map { $0.refusals503 }.reduce(0, +)
        let lostTotal = stats.lost + stats.lostSeqs
        let dupTotal = stats.duplicates + stats.duplicateSeqs
        let httpErrors = stats.httpErrors.filter { $0.key != 503 }.values.reduce(0, +)
        let failures = stats.failures.values.reduce(0, +)
        let cmdDelta = RedisCommandStats.delta(cmdBefore, cmdAfter)
        let cmdSteady = RedisCommandStats.delta(cmdWarm, cmdBefore)
        let topCommands = cmdDelta.sorted { $0.value.usec > $1.value.usec }.prefix(8)
        let stormS = Double(duringTo - killAt) / 1e6

        log("  → \(affected.count) readers affected (\(dropsBefore) drops before the kill), \(catchUps.count) caught up: p50 \(fmt(q(catchUps, 0.5))) ms p99 \(fmt(q(catchUps, 0.99))) ms max \(fmt(q(catchUps, 1.0))) ms after the kill; reconnect requests per affected reader \(attempts.max() ?? 0) max (\(refusals) refused 503)")
        log("    kill → drop seen p50 \(fmt(q(dropsSeen, 0.5))) p99 \(fmt(q(dropsSeen, 0.99))) ms; the load generator sent the first reconnection late by p50 \(fmt(q(lateness, 0.5))) p99 \(fmt(q(lateness, 0.99))) ms (after the policy's wait)")
        log("    kill → the reconnection's request p50 \(fmt(q(reconnects, 0.5))) p99 \(fmt(q(reconnects, 0.99))) ms, → its 200 p50 \(fmt(q(accepted, 0.5))) p99 \(fmt(q(accepted, 0.99))) ms, → the first live event p50 \(fmt(q(firstLive, 0.5))) p99 \(fmt(q(firstLive, 0.99))) ms")
        log("    unaffected readers: delivery latency p99 \(fmt(before.quantileMs(0.99), 2)) ms before, \(fmt(duringLat.quantileMs(0.99), 2)) ms during the storm; inter-event gap p99 \(fmt(beforeGaps.quantileMs(0.99), 1)) → \(fmt(duringGaps.quantileMs(0.99), 1)) ms (\(rate) tokens/s: \(fmt(1000 / rate, 1)) ms nominal)")
        log("    redis CPU \(fmt(redisBefore.avg))% before, \(fmt(redisStorm.avg))% during the storm (peak \(fmt(redisStorm.peak))% per 100 ms, \(fmt(redisStorm.seconds, 2)) CPU-s over \(fmt(stormS, 2)) s); surviving relays \(fmt(serverBeforePct))% → \(fmt(serverDuringSplit?.total))%; load balancer \(fmt(lbBeforePct))% → \(fmt(lbDuringPct))%; load generator \(fmt(benchBeforePct))% → \(fmt(benchDuringPct))%; stolen \(fmt(stolen))%")
        if !topCommands.isEmpty {
            log("    redis commands from the kill to \(fmt(cmdS, 2)) s after it (same span before the kill): " + topCommands.map {
                let steady = cmdSteady[$0.key].map { Double($0.calls) * cmdS / warmS } ?? 0
                return "\($0.key) \($0.value.calls) calls (\(Int(steady))) \(fmt(Double($0.value.usec) / 1000, 1)) ms"
            }.joined(separator: ", "))
        }
        log("    lost \(lostTotal) (n \(stats.lost), seq \(stats.lostSeqs)), duplicated \(dupTotal) (n \(stats.duplicates), seq \(stats.duplicateSeqs)), readers without the whole answer \(incomplete), failures \(stats.failures), HTTP \(stats.httpErrors), drops \(stats.drops), error events \(stats.errorEvents)")

        for sample in stats.seqSamples { log("    SSE id out of sequence: \(sample)") }
        var d: [String: Any] = [
            "scenario": "storm", "answers": answers, "readers": readersN, "rate": rate, "tokens": tokens,
            "instances": opts.createPorts.count + 1, "affected": affected.count, "caught_up": catchUps.count,
            "all_caught_up": allIn && catchUps.count == affected.count,
            "lost": lostTotal, "duplicates": dupTotal, "incomplete": incomplete, "failures": failures,
            "http_errors": httpErrors, "refused_503": refusals, "error_events": stats.errorEvents,
            "max_attempts": attempts.max() ?? 0, "storm_s": stormS,
        ]
        let rows: [(String, Double?)] = [
            ("drop_seen_p50_ms", q(dropsSeen, 0.5)), ("drop_seen_p99_ms", q(dropsSeen, 0.99)),
            ("bench_late_p50_ms", q(lateness, 0.5)), ("bench_late_p99_ms", q(lateness, 0.99)),
            ("reconnect_p50_ms", q(reconnects, 0.5)), ("reconnect_p99_ms", q(reconnects, 0.99)),
            ("accepted_p50_ms", q(accepted, 0.5)), ("accepted_p99_ms", q(accepted, 0.99)),
            ("first_live_p50_ms", q(firstLive, 0.5)), ("first_live_p99_ms", q(firstLive, 0.99)),
            ("p50_ms", q(catchUps, 0.5)), ("p99_ms", q(catchUps, 0.99)), ("max_ms", q(catchUps, 1.0)),
            ("latency_p99_before_ms", before.quantileMs(0.99)), ("latency_p99_during_ms", duringLat.quantileMs(0.99)),
            ("latency_p50_before_ms", before.quantileMs(0.5)), ("latency_p50_during_ms", duringLat.quantileMs(0.5)),
            ("gap_p99_before_ms", beforeGaps.quantileMs(0.99)), ("gap_p99_during_ms", duringGaps.quantileMs(0.99)),
            ("redis_cpu_before_pct", redisBefore.avg), ("redis_cpu_storm_pct", redisStorm.avg),
            ("redis_cpu_peak_pct", redisStorm.peak), ("redis_cpu_s", redisStorm.seconds),
            ("server_cpu_before_pct", serverBeforePct), ("server_cpu_storm_pct", serverDuringSplit?.total),
            ("lb_cpu_before_pct", lbBeforePct), ("lb_cpu_storm_pct", lbDuringPct),
            ("bench_cpu_before_pct", benchBeforePct), ("bench_cpu_storm_pct", benchDuringPct), ("steal_pct", stolen),
        ]
        for (k, v) in rows { if let v, v.isFinite { d[k] = v } }
        if !topCommands.isEmpty {
            d["redis_commands_window_s"] = cmdS
            d["redis_commands"] = Dictionary(uniqueKeysWithValues: topCommands.map {
                ($0.key, ["calls": $0.value.calls, "usec": $0.value.usec,
                          "calls_same_span_before": Int((cmdSteady[$0.key].map { Double($0.calls) } ?? 0) * cmdS / warmS)])
            })
        }
        var load = [Double](repeating: 0, count: 3)
        if getloadavg(&load, 3) == 3 { d["loadavg_1m"] = load[0] }
        // Correctness only: nothing lost or duplicated, every reader back and to the end.
        let ok = lostTotal == 0 && dupTotal == 0 && incomplete == 0 && failures == 0 && httpErrors == 0
            && stats.errorEvents == 0 && catchUps.count == affected.count && !affected.isEmpty
        d["ok"] = ok
        emit(d)
        return ok
    }
}

/// `INFO commandstats` of a Redis (through `redis-cli`): calls and µs per command.
enum RedisCommandStats {
    struct Entry { var calls: Int; var usec: Int }

    static func read(url: String) -> [String: Entry] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["redis-cli", "-u", url, "info", "commandstats"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return [:] }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        var r: [String: Entry] = [:]
        // cmdstat_xrange:calls=12,usec=340,usec_per_call=28.33,…
        for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) where line.hasPrefix("cmdstat_") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[line.index(line.startIndex, offsetBy: 8)..<colon])
            var e = Entry(calls: 0, usec: 0)
            for kv in line[line.index(after: colon)...].split(separator: ",") {
                let parts = kv.split(separator: "=")
                guard parts.count == 2 else { continue }
                if parts[0] == "calls" { e.calls = Int(parts[1]) ?? 0 }
                if parts[0] == "usec" { e.usec = Int(parts[1]) ?? 0 }
            }
            r[name] = e
        }
        return r
    }

    static func delta(_ a: [String: Entry], _ b: [String: Entry]) -> [String: Entry] {
        var r: [String: Entry] = [:]
        for (k, e) in b {
            let calls = e.calls - (a[k]?.calls ?? 0), usec = e.usec - (a[k]?.usec ?? 0)
            if calls > 0 { r[k] = Entry(calls: calls, usec: usec) }
        }
        return r
    }
}
