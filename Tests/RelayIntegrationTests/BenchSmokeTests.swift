import Foundation
import RelayTestSupport
import XCTest

/// `stream-relay-bench <scenario> --quick` (docs/BENCHMARKS.md) works against a real relay and a
/// real Redis: it exits 0 and reports nothing lost or duplicated. No timing is asserted.
final class BenchSmokeTests: RelayTestCase {
    /// One bench user opens every stream: lift the per-session stream limit and the
    /// monthly budget, as `scripts/bench.sh` does.
    static let loadTestLimits = ["RELAY_MAX_STREAMS_PER_SESSION": "1000000", "RELAY_BUDGETS": "free=20000,pro=1000000000000"]

    /// Runs the bench and returns (exit status, stdout RESULT lines as JSON, stderr).
    func runBench(_ args: [String], timeout: Double = 120) throws -> (Int32, [[String: Any]], String) {
        let run = try BenchRun.run(args, timeout: timeout)
        return (run.status, run.results, run.stderr)
    }

    func testStreamQuickDeliversEverything() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_HEARTBEAT": "1s"].merging(Self.loadTestLimits) { $1 })
        let (status, results, err) = try runBench(["stream", "--quick", "--port", String(relay.port),
                                                    "--server-pids", String(relay.process.processIdentifier)])
        XCTAssertEqual(status, 0, err)
        let steps = results.filter { $0["scenario"] as? String == "stream" }
        XCTAssertFalse(steps.isEmpty, err)
        for s in steps {
            XCTAssertEqual(s["lost"] as? Int, 0, "lost events: \(s)")
            XCTAssertEqual(s["duplicates"] as? Int, 0, "duplicates: \(s)")
            XCTAssertEqual(s["errors"] as? Int, 0, "errors: \(s)")
            XCTAssertEqual(s["late"] as? Int, 0, "tails not received by the deadline: \(s)")
            XCTAssertGreaterThan(s["deliveries_per_s"] as? Double ?? 0, 0)
            // Coalescing is off in this relay (`startRelay`): one SSE event per delta.
            XCTAssertGreaterThan(s["delta_events"] as? Int ?? 0, 0, "\(s)")
            XCTAssertEqual(s["merged_deltas"] as? Int, 0, "no merged deltas: \(s)")
            // The per-delivery cost read off directly: server CPU % × 10,000 / deliveries per s
            // (one subscriber per stream: deliveries are the events).
            let cpu = try XCTUnwrap(s["server_cpu_pct"] as? Double, "\(s)")
            let perDelivery = try XCTUnwrap(s["server_cpu_us_per_delivery"] as? Double, "\(s)")
            let deliveries = try XCTUnwrap(s["deliveries_per_s"] as? Double)
            XCTAssertEqual(perDelivery, cpu * 10_000 / deliveries, accuracy: 1e-6 * max(1, perDelivery))
            XCTAssertEqual(s["events_per_s"] as? Double ?? -1, deliveries, accuracy: 1e-9, "\(s)")
            XCTAssertNil(s["redis_cpu_us_per_event"], "no --redis-pid, no Redis figure: \(s)")
            // The kernel's share of it (most of what is left is the send per event).
            let kernel = try XCTUnwrap(s["server_kernel_cpu_us_per_delivery"] as? Double, "\(s)")
            XCTAssertGreaterThanOrEqual(kernel, 0, "\(s)")
            XCTAssertLessThanOrEqual(kernel, perDelivery, "\(s)")
        }
        XCTAssertTrue(err.contains("scenario stream"), "parameters printed: \(err)")
        XCTAssertTrue(err.contains("µs/delivery"), "per-event CPU printed: \(err)")
    }

    /// `--model simulated-bench-parts`: the load generator reads the stamps from reasoning and
    /// argument parts as from deltas, so the same accounting holds for the part-heavy answer.
    func testStreamQuickWithThePartHeavyAnswerDeliversEverything() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_HEARTBEAT": "1s"].merging(Self.loadTestLimits) { $1 })
        let (status, results, err) = try runBench(["stream", "--quick", "--model", "simulated-bench-parts", "--port", String(relay.port)])
        XCTAssertEqual(status, 0, err)
        let steps = results.filter { $0["scenario"] as? String == "stream" }
        XCTAssertFalse(steps.isEmpty, err)
        for s in steps {
            XCTAssertEqual(s["model"] as? String, "simulated-bench-parts", "\(s)")
            XCTAssertEqual(s["lost"] as? Int, 0, "lost events: \(s)")
            XCTAssertEqual(s["duplicates"] as? Int, 0, "duplicates: \(s)")
            XCTAssertEqual(s["errors"] as? Int, 0, "errors: \(s)")
            XCTAssertEqual(s["late"] as? Int, 0, "tails not received by the deadline: \(s)")
            let parts = try XCTUnwrap(s["part_events"] as? Int, "\(s)")
            let deltas = try XCTUnwrap(s["delta_events"] as? Int, "\(s)")
            XCTAssertGreaterThan(parts, 5 * deltas, "mostly parts (36 of every 40 events): \(s)")
        }
    }

    func testResumeStormQuickHasNoGapsOrDuplicates() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20", "RELAY_HEARTBEAT": "1s"].merging(Self.loadTestLimits) { $1 })
        let (status, results, err) = try runBench(["resume-storm", "--quick", "--port", String(relay.port)])
        XCTAssertEqual(status, 0, err)
        let r = try XCTUnwrap(results.first { $0["scenario"] as? String == "resume-storm" }, err)
        XCTAssertEqual(r["gaps"] as? Int, 0, "\(r)")
        XCTAssertEqual(r["duplicates"] as? Int, 0, "\(r)")
        XCTAssertEqual(r["caught_up"] as? Int, r["clients"] as? Int, "\(r)")
    }

    /// `storm --quick`: three relays behind real nginx (deploy/nginx.conf), 300 readers of
    /// 300 live answers generated on two of them, the third SIGKILLed by the bench while
    /// its readers stream. Its readers reconnect through nginx by the kits' reconnect
    /// policy with `Last-Event-ID`; every reader must end with the whole answer, each
    /// event once (SSE id and delta index continuous). No timing is asserted.
    func testStormQuickLosesAndDuplicatesNothingWhenARelayIsKilled() throws {
        guard NginxProcess.isAvailable else {
            try XCTSkipIf(ProcessInfo.processInfo.environment["RELAY_TEST_ALLOW_NO_NGINX"] == "1", "nginx is not installed")
            return XCTFail("nginx is not installed (scripts/install-deps.sh installs it)")
        }
        let ports = try (0..<3).map { _ in try FreePort.find() }
        let relays = try (0..<3).map { i in
            try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "5", "RELAY_HEARTBEAT": "1s", "RELAY_WORKERS": "2",
                            "RELAY_LISTEN": "127.0.0.1:\(ports[i])", "RELAY_INSTANCE": "storm-\(i + 1)"].merging(Self.loadTestLimits) { $1 })
        }
        let nginx = try NginxProcess(upstreams: ports)
        defer { nginx.stop() }
        let pids = relays.map { String($0.process.processIdentifier) }
        let run = try BenchRun.run(["storm", "--quick", "--port", String(nginx.port), "--rate", "5",
                                    "--create-ports", "\(ports[1]),\(ports[2])", "--kill-pid", pids[0],
                                    "--server-pids", "\(pids[1]),\(pids[2])", "--redis-url", redis.url], timeout: 180)
        XCTAssertEqual(run.status, 0, run.stderr)
        let r = try XCTUnwrap(run.results.first { $0["scenario"] as? String == "storm" }, run.stderr)
        XCTAssertEqual(r["readers"] as? Int, 300, "\(r)")
        let affected = try XCTUnwrap(r["affected"] as? Int, "\(r)")
        // Round robin over three upstreams: about a third of the readers were on the killed one.
        XCTAssertGreaterThan(affected, 30, "\(r)")
        XCTAssertLessThan(affected, 300, "the readers on the other two were not affected: \(r)")
        XCTAssertEqual(r["caught_up"] as? Int, affected, "\(r)")
        XCTAssertEqual(r["lost"] as? Int, 0, "\(r)")
        XCTAssertEqual(r["duplicates"] as? Int, 0, "\(r)")
        XCTAssertEqual(r["incomplete"] as? Int, 0, "every reader got the whole answer: \(r)")
        XCTAssertEqual(r["failures"] as? Int, 0, "\(r)")
        XCTAssertEqual(r["ok"] as? Bool, true, "\(r)")
        XCTAssertFalse(relays[0].process.isRunning, "the bench killed the first relay")
        XCTAssertTrue(run.stderr.contains("scenario storm"), "parameters printed: \(run.stderr)")

        // The report renders the run as the storm table.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("storm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let resultsFile = dir.appendingPathComponent("results.jsonl"), out = dir.appendingPathComponent("out.md")
        try (try JSONSerialization.data(withJSONObject: r) + Data("\n".utf8)).write(to: resultsFile)
        let report = try BenchRun.run(["report", "--results", resultsFile.path, "--out", out.path])
        XCTAssertEqual(report.status, 0, report.stderr)
        let md = try String(contentsOf: out, encoding: .utf8)
        XCTAssertTrue(md.contains("### storm: 300 readers of 300 live answers (5 tokens/s) through nginx over 3 relays"), md)
        XCTAssertTrue(md.contains("| readers on the killed relay (affected) | \(affected) |"), md)
        XCTAssertTrue(md.contains("| lost events (SSE id and delta index) | 0 |"), md)
    }

    /// `send-floor` needs no server: it paces one relay-framed event per connection at
    /// `--rate` and reports the sending thread's CPU per send, user + kernel; the report
    /// renders its table.
    /// The slow-link scenario: a throttled reader (4 KB/s, SO_RCVBUF 2 KB) and a
    /// fast one on the same 150-token answer at 150 tokens/s; both get the answer exactly,
    /// the fast one as one event per token, the slow one in fewer, merged events (the
    /// link carries less than the answer's framing needs).
    func testSlowLinkQuickGetsTheWholeAnswerOnBothLinks() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "150", "RELAY_COALESCE_BACKLOG": "1024"].merging(Self.loadTestLimits) { $1 })
        let (status, results, err) = try runBench(["slow-link", "--quick", "--port", String(relay.port),
                                                    "--server-pids", String(relay.process.processIdentifier)])
        XCTAssertEqual(status, 0, err)
        let r = try XCTUnwrap(results.first { $0["scenario"] as? String == "slow-link" }, err)
        XCTAssertEqual(r["exact"] as? Bool, true, "\(r)")
        XCTAssertEqual(r["tokens"] as? Int, 150, "\(r)")
        XCTAssertEqual(r["fast_events"] as? Int, 151, "one event per token and the done on the fast link: \(r)")
        let slowEvents = try XCTUnwrap(r["slow_events"] as? Int)
        XCTAssertLessThan(slowEvents, 151, "merged deltas on the slow link: \(r)")
        let wire = try XCTUnwrap(r["wire_bytes"] as? Int)
        let text = try XCTUnwrap(r["text_bytes"] as? Int)
        XCTAssertGreaterThan(text, 0)
        XCTAssertEqual(r["wire_per_text"] as? Double ?? -1, Double(wire) / Double(text), accuracy: 1e-9)
        XCTAssertLessThan(wire, try XCTUnwrap(r["fast_wire_bytes"] as? Int), "fewer bytes on the slow link: \(r)")
        // Signed: the slow reader's `done` may come a moment before the fast reader's (both
        // end with the same generation), never long before it. No timing target here.
        XCTAssertGreaterThan(try XCTUnwrap(r["last_token_after_end_s"] as? Double, "\(r)"), -1, "\(r)")
        XCTAssertTrue(err.contains("scenario slow-link"), "parameters printed: \(err)")
    }

    func testSendFloorQuickPacesAndReportsCPUPerSend() throws {
        let (status, results, err) = try runBench(["send-floor", "--quick", "--steps", "20", "--rate", "50", "--duration", "2"])
        XCTAssertEqual(status, 0, err)
        let r = try XCTUnwrap(results.first { $0["scenario"] as? String == "send-floor" }, err)
        XCTAssertEqual(r["n"] as? Int, 20, "\(r)")
        // 20 connections × 50 events/s, paced by a 1 ms tick: about 1,000 sends/s.
        let rate = try XCTUnwrap(r["sends_per_s"] as? Double, "\(r)")
        XCTAssertEqual(rate, 1000, accuracy: 150, "\(r)")
        let user = try XCTUnwrap(r["user_us_per_send"] as? Double), kernel = try XCTUnwrap(r["kernel_us_per_send"] as? Double)
        XCTAssertGreaterThanOrEqual(user, 0)
        XCTAssertGreaterThanOrEqual(kernel, 0)
        XCTAssertEqual(r["cpu_us_per_send"] as? Double ?? -1, user + kernel, accuracy: 1e-9, "\(r)")
        // `id: 1234` + `data: ` + the bench delta + blank line, in a chunk: `54\r\n…\r\n`.
        XCTAssertEqual(r["frame_bytes"] as? Int, 84, "\(r)")

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("floor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let resultsFile = dir.appendingPathComponent("results.jsonl"), out = dir.appendingPathComponent("out.md")
        let line = try JSONSerialization.data(withJSONObject: r)
        try (line + Data("\n".utf8)).write(to: resultsFile)
        let (rs, _, rerr) = try runBench(["report", "--results", resultsFile.path, "--out", out.path])
        XCTAssertEqual(rs, 0, rerr)
        let md = try String(contentsOf: out, encoding: .utf8)
        XCTAssertTrue(md.contains("### send-floor"), md)
        XCTAssertTrue(md.contains("| 20 | \(Int(rate.rounded()).formatted()) |"), md)
        XCTAssertFalse(md.contains("A quick run"), "no quick-run caveat without a quick meta: \(md)")
        // A quick run's report says it measures nothing against the goals.
        let meta = dir.appendingPathComponent("meta.json")
        try Data(#"{"mode": "quick", "date": "2026-12-02T00:00Z", "elapsed_s": 60}"#.utf8).write(to: meta)
        let (qs, _, qerr) = try runBench(["report", "--results", resultsFile.path, "--meta", meta.path, "--out", out.path])
        XCTAssertEqual(qs, 0, qerr)
        let quick = try String(contentsOf: out, encoding: .utf8)
        XCTAssertTrue(quick.contains("quick run"), quick)
        XCTAssertTrue(quick.contains("A quick run: a smoke test, not a measurement against the goals."), quick)
    }

    func testAppendCeilingQuickRunsTheRelayScript() throws {
        let (status, results, err) = try runBench(["append-ceiling", "--quick", "--redis-url", redis.url])
        XCTAssertEqual(status, 0, err)
        let r = try XCTUnwrap(results.first { $0["scenario"] as? String == "append-ceiling" }, err)
        XCTAssertEqual(r["failed"] as? Int, 0, "\(r)")
        XCTAssertGreaterThan(r["appends_per_s"] as? Double ?? 0, 0)
    }

    /// `slow-link --quick` against a relay that does not coalesce (`RELAY_COALESCE_BACKLOG=0`),
    /// through a proxy that counts the bytes sent to each connection: the slow link shows
    /// one event per token (151 with the done), the bench's `wire_bytes` is what the proxy
    /// delivered to the slow connection (less at most the bytes still unread when the bench
    /// closed it), and the reader was held to the token bucket's 4 KB/s: no more bytes than
    /// its burst plus one tick's worth per 20 ms of the run.
    func testSlowLinkWithoutCoalescingReportsOneEventPerTokenAndTheExactWireBytes() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "150", "RELAY_COALESCE_BACKLOG": "0",
                                    "RELAY_MAX_STREAMS_PER_SESSION": "1000000", "RELAY_BUDGETS": "free=20000,pro=1000000000000"])
        let proxy = try CountingProxy(target: relay.port)
        defer { proxy.stop() }
        let r = try BenchRun.run(["slow-link", "--quick", "--port", String(proxy.port)]).result("slow-link")
        XCTAssertEqual(r["exact"] as? Bool, true, "\(r)")
        XCTAssertEqual(r["fast_events"] as? Int, 151, "\(r)")
        XCTAssertEqual(r["slow_events"] as? Int, 151, "no coalescing: one event per token on the slow link too: \(r)")
        let wire = try XCTUnwrap(r["wire_bytes"] as? Int)
        let fastWire = try XCTUnwrap(r["fast_wire_bytes"] as? Int)
        let counted = proxy.downstream.value
        print("slow-link without coalescing: bench \(wire) / \(fastWire) bytes, proxy \(counted), wall \(r["wall_s"] ?? "?") s")
        let slowSent = try XCTUnwrap(counted.first)
        XCTAssertLessThanOrEqual(wire, slowSent, "the bench cannot have read more than was sent")
        XCTAssertLessThanOrEqual(slowSent - wire, 16, "at most the chunked terminator unread at close: bench \(wire), proxy \(slowSent)")
        // The fast reader's (last, successful) connection.
        XCTAssertTrue(counted.dropFirst().contains { $0 >= fastWire && $0 - fastWire <= 16 }, "fast: bench \(fastWire), proxy \(counted)")
        // Token bucket: 81 bytes per 20 ms tick, burst 405.
        let wall = try XCTUnwrap(r["wall_s"] as? Double)
        XCTAssertLessThanOrEqual(Double(wire), 405 + 81 * (wall / 0.02 + 2), "read no faster than 4 KB/s: \(wire) bytes in \(wall) s")
        XCTAssertGreaterThan(Double(wire) / wall, 2_000, "and not far slower either: \(wire) bytes in \(wall) s")
    }
}
