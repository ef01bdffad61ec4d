import Foundation
import RelayCore
import RelayLoop
import RelayRedis
import RelayConfiguration
import RelayEventStore
import RelayCluster

extension Runner {
    /// `append-ceiling`: the relay's per-event append (`EventLog.append`: `XADD NOMKSTREAM`
    /// trimming as `StreamTrim` says, then `PUBLISH` once acknowledged, and the text once
    /// per group of events, `EventLog.writeText` / `TextCheckpoint`, as `StreamAppender`
    /// does; lossless text on as in the relay's default) against Redis
    /// directly, no HTTP: `connections` hiredis connections on this loop, each with
    /// `pipeline` appends in flight spread over `streams` streams.
    func appendCeilingScenario(redis: RedisEndpoint) -> Bool {
        var ok = true
        log("scenario append-ceiling: EventLog.append (XADD NOMKSTREAM, exact MAXLEN trim every \(StreamTrim(maxLen: 200).step)th event, SETRANGE of the text and of its offsets once per \(TextCheckpoint(trim: StreamTrim(maxLen: 200)).every) events, PUBLISH after the reply, PEXPIRE 300 s when due, lossless text \(opts.lossless ? "on" : "off")) on \(redis), \(opts.streams) streams per connection, \(opts.pipeline) appends in flight per connection, \(opts.duration) s per run, connections \(opts.connectionSteps)")
        ok = atRestCostScenario() && ok
        // Each step twice, values stored as plaintext then sealed at rest (AES-256-GCM,
        // docs/DATA_MODEL.md §15): the cost of sealing side by side, in the same run.
        for conns in opts.connectionSteps {
          for sealed in [false, true] {
            var logs: [EventLog] = []
            var connsList: [any RedisCommandChannel] = []
            var sharded = false
            if case .cluster = redis { sharded = true }
            for _ in 0..<conns {
                // `redis+cluster://`: one cluster client (a connection per primary) each.
                let c = RedisCommandChannels.make(loop: loop, endpoint: redis, outageGraceMs: 5_000)
                let l = EventLog(connection: c, settings: EventStoreSettings(maxLen: 200, ttlMs: 300_000, lossless: opts.lossless), sharded: sharded,
                                 cipher: sealed ? try! AtRestCipher(ring: Runner.benchKeyRing) : nil)
                c.onConnect = { l.connected() }
                c.connect()
                connsList.append(c)
                logs.append(l)
            }
            spin(timeoutMs: 5000) { connsList.allSatisfy { $0.isConnected } }
            spin(timeoutMs: 300)  // SCRIPT LOAD replies
            // Create the streams.
            var ids: [[RequestID]] = []
            var created = 0
            for (ci, l) in logs.enumerated() {
                var row: [RequestID] = []
                for s in 0..<opts.streams {
                    let id = try! RequestID(validating: "ceiling\(ci)x\(s)x\(UInt32.random(in: 0...UInt32.max))")
                    row.append(id)
                    l.create(id, owner: "bench", sid: "bench", instance: "bench", nowMs: UInt64(Date().timeIntervalSince1970 * 1000),
                             budgetKey: "", promptEstimate: 0) { _ in created += 1 }
                }
                ids.append(row)
            }
            spin(timeoutMs: 5000) { created == conns * opts.streams }
            var seqs = [[UInt64]](repeating: [UInt64](repeating: 0, count: opts.streams), count: conns)
            // The relay's lossless-resume text, written once per group of events.
            var texts = [[TextCheckpoint]](repeating: [TextCheckpoint](repeating: TextCheckpoint(trim: logs[0].trim, sealedKidBytes: sealed ? Runner.benchKeyRing.currentKid.utf8.count : nil),
                                                                       count: opts.streams), count: conns)
            var next = [Int](repeating: 0, count: conns)
            var inFlight = [Int](repeating: 0, count: conns)
            var acked = 0
            var failed = 0
            var hist = LatencyHistogram()
            var running = true
            var pump: ((Int) -> Void)!
            pump = { ci in
                while running && inFlight[ci] < self.opts.pipeline {
                    let s = next[ci]
                    next[ci] = (s + 1) % self.opts.streams
                    seqs[ci][s] += 1
                    let seq = seqs[ci][s]
                    let sent = nowMicros()
                    let json = BenchEvent.delta(micros: sent, k: Int(seq))
                    inFlight[ci] += 1
                    // The relay refreshes TTLs once per 10 s of a stream's appends
                    // (TTLRefreshPolicy): one append in 500 at 50 tokens/s.
                    let keys = StreamKeys(ids[ci][s])
                    if self.opts.lossless {
                        texts[ci][s].add(seq: seq, text: "t=\(sent);")
                        if texts[ci][s].isDue, let w = texts[ci][s].take() {
                            logs[ci].writeText(keys, w) { r in
                                var ok = true
                                if case .failure = r { failed += 1; ok = false }
                                texts[ci][s].written(through: w.throughSeq, ok: ok)
                            }
                        }
                    }
                    // Sealed once (when on) for the entry and the live message, as the appender does.
                    let stored = logs[ci].storedForm(json, keys)
                    let cmds = logs[ci].commands(for: keys)
                    logs[ci].append(cmds, seq: seq, json: json, refreshTTL: seq % 500 == 1, stored: stored) { view in
                        inFlight[ci] -= 1
                        switch EventLog.appendOutcome(view) {
                        case .success:
                            logs[ci].publish(cmds, seq: seq, json: json, stored: stored)
                            acked += 1; hist.record(nowMicros() - sent)
                        case .failure: failed += 1
                        }
                        pump(ci)
                    }
                }
            }
            var redisCPU = CPUWindow(opts.redisPid.map { [$0] } ?? [])
            redisCPU.start()
            let t0 = monoMs()
            for ci in 0..<conns { pump(ci) }
            spin(timeoutMs: UInt64(opts.duration * 1000))
            let n = acked
            let dt = Double(monoMs() - t0) / 1000
            let cpu = redisCPU.percent()
            running = false
            spin(timeoutMs: 2000) { inFlight.allSatisfy { $0 == 0 } }
            for c in connsList { c.close() }
            let rate = Double(n) / dt
            log("  \(conns) connection(s), encryption \(sealed ? "on" : "off"): \(Int(rate)) appends/s, round trip p50 \(fmt(hist.quantileMs(0.5), 2)) ms p99 \(fmt(hist.quantileMs(0.99), 2)) ms, failed \(failed), redis CPU \(fmt(cpu))%")
            var d: [String: Any] = ["scenario": "append-ceiling", "encryption": sealed ? "on" : "off", "connections": conns, "pipeline": opts.pipeline,
                                    "streams_per_connection": opts.streams, "appends_per_s": rate, "failed": failed]
            if let v = hist.quantileMs(0.5) { d["p50_ms"] = v }
            if let v = hist.quantileMs(0.99) { d["p99_ms"] = v }
            if let cpu { d["redis_cpu_pct"] = cpu }
            d["ok"] = failed == 0 && n > 0
            emit(d)
            ok = ok && failed == 0 && n > 0
            pump = nil
          }
        }
        return ok
    }

    /// A fixed bench key (32 bytes), kid `bench`.
    static let benchKeyRing = try! AtRestKeyRing.parse("bench:" + String(repeating: "QUJD", count: 10) + "QUI=")

    /// `at-rest-cost`: the CPU cost per event of sealing at rest, on this thread, no Redis:
    /// what the relay adds per event with `RELAY_ENCRYPTION_KEYS` (one seal, shared by the
    /// stream entry and the live message; one open per reader), for an English and an Arabic
    /// delta, with the worker's reused EVP contexts (`AtRestCipher`) and, for comparison,
    /// with contexts made per call.
    func atRestCostScenario() -> Bool {
        let samples = [("English", StreamEvent.delta("The Receiving Party shall ").json),
                       ("Arabic", StreamEvent.delta("يلتزم الطرف المتلقي ").json)]
        let aad = "relay:{0123456789abcdef01234567:req-0123456789}:events"
        let cipher = try! AtRestCipher(ring: Runner.benchKeyRing)
        let n = opts.quick ? 20_000 : 200_000
        log("scenario at-rest-cost: AES-256-GCM seal + open per event, \(n) events per variant")
        var ok = true
        for (language, json) in samples {
            var sink = 0
            func time(_ body: () -> Void) -> Double {
                let t0 = nowMicros()
                body()
                return Double(nowMicros() - t0) / Double(n)
            }
            let reused = time {
                for _ in 0..<n {
                    let a = cipher.seal(json, aad: aad)
                    sink &+= (try? cipher.open(a, aad: aad))?.count ?? -1_000_000
                }
            }
            let perCallN = max(1, n / 10)
            let t0 = nowMicros()
            for _ in 0..<perCallN {
                let c = try! AtRestCipher(ring: Runner.benchKeyRing)
                let a = c.seal(json, aad: aad)
                sink &+= (try? AtRestCipher(ring: Runner.benchKeyRing).open(a, aad: aad))?.count ?? -1_000_000
            }
            let perCall = Double(nowMicros() - t0) / Double(perCallN)
            let plainBytes = json.utf8.count
            let sealedBytes = SealedFormat.sealedLength(plaintextBytes: plainBytes, kidBytes: 5)
            log("  \(language) delta (\(plainBytes) bytes, sealed \(sealedBytes)): \(fmt(reused, 2)) µs per event with reused contexts, \(fmt(perCall, 2)) µs with contexts made per call")
            emit(["scenario": "at-rest-cost", "language": language, "plaintext_bytes": plainBytes, "sealed_bytes": sealedBytes,
                  "us_per_event_reused": reused, "us_per_event_per_call": perCall, "ok": sink > 0])
            ok = ok && sink > 0
        }
        return ok
    }
}
