import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// `GET /metrics` is valid Prometheus text exposition (format 0.0.4) with the relay's naming
/// conventions, and a SIGTERM drains: `/readyz` 503 at once, the running generation finishes,
/// the process exits 0 (docs/OPERATIONS.md).
final class MetricsExpositionTests: RelayTestCase {
    private func pro(_ sub: String) -> String { RelayProcess.token(sub: sub, tier: "pro") }

    /// GET /metrics is valid Prometheus text exposition; on SIGTERM /readyz is 503 at
    /// once while a generation still runs, the generation finishes during the drain,
    /// and the process exits 0.
    func testMetricsExpositionAndDrainOnSIGTERM() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let token = pro("metrics")
        XCTAssertEqual(try Chat.start(port: relay.port, token: token, maxTokens: 20).readAll().count, 21)
        // Per-event counters reach the shared metrics on each worker's next tick (≤ 1 s).
        var r = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics")
        try eventually(5, "relay_events_appended_total 21 in /metrics") {
            r = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics")
            return r.text.contains("relay_events_appended_total 21")
        }
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Content-Type"), "text/plain; version=0.0.4")
        let families = try Self.validateExposition(r.text)
        for (name, type) in [("relay_live_connections", "gauge"), ("relay_running_generations", "gauge"),
                             ("relay_events_appended_total", "counter"), ("relay_events_delivered_total", "counter"),
                             ("relay_resumes_total", "counter"), ("relay_revocations_total", "counter"),
                             ("relay_cancels_total", "counter"), ("relay_slow_consumer_disconnects_total", "counter"),
                             ("relay_redis_command_duration_seconds", "histogram"),
                             ("relay_upstream_time_to_first_token_seconds", "histogram"),
                             ("relay_stream_duration_seconds", "histogram")] {
            XCTAssertEqual(families[name]?.type, type, name)
        }
        XCTAssertGreaterThanOrEqual(families["relay_events_appended_total"]?.samples.first?.value ?? 0, 21)
        XCTAssertGreaterThanOrEqual(families["relay_redis_command_duration_seconds"]?.samples.first { $0.name.hasSuffix("_count") }?.value ?? 0, 1)

        // Drain: a generation of ~1.5 s is running when SIGTERM arrives.
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 150)
        for _ in 0..<5 { _ = try c.nextEvent() }
        // A keep-alive connection the relay has accepted (it answered on it) before the drain.
        let early = try RawConnection(port: relay.port)
        try early.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        var first: [UInt8] = []
        while String(decoding: first, as: UTF8.self).range(of: #"\r\n\r\n[^\r]*\}"#, options: .regularExpression) == nil {
            guard let chunk = early.read(max: 4096, timeout: 5), !chunk.isEmpty else {
                return XCTFail("no /healthz answer on the early connection: \(String(decoding: first, as: UTF8.self))")
            }
            first += chunk
        }
        let sigterm = Date()
        kill(relay.process.processIdentifier, SIGTERM)
        try eventually(5, "the relay to log that it is draining") { relay.log.contains("\"msg\":\"draining\"") }
        try early.send("GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let ready = String(decoding: early.readToEnd(timeout: 5), as: UTF8.self)
        XCTAssertTrue(ready.hasPrefix("HTTP/1.1 503"), "readyz at once after SIGTERM: \(ready.prefix(200))")
        XCTAssertTrue(ready.contains("\"not_ready\"") && ready.contains("draining"), ready)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta", sub: "metrics"), "state"), "running", "the generation was still running")
        XCTAssertThrowsError(try HTTPClient.request(port: relay.port, method: "GET", path: "/readyz", timeout: 2),
                             "new connections are refused while draining (the LB retries them elsewhere)")
        // The client's response is ended (without done) so that it resumes elsewhere.
        let rest = try c.readAll(timeout: 5)
        XCTAssertFalse(rest.contains { (try? StreamEvent(json: $0.data))?.isTerminal == true }, "cut, not finished, by the drain")
        XCTAssertEqual(relay.terminate(timeout: 20), 0, "exit 0 after the drain")
        let drained = Date().timeIntervalSince(sigterm)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta", sub: "metrics"), "state"), "done", "the generation finished during the drain")
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta", sub: "metrics"), "last_seq"), "151")
        print("drain: /readyz 503 at once, generation finished, exit 0 after \(String(format: "%.2f", drained)) s")
    }

    struct Family {
        var type = ""
        var samples: [(name: String, labels: String, value: Double)] = []
    }

    /// Checks the Prometheus text format (version 0.0.4) and naming conventions:
    /// one TYPE per family before its samples, valid names and values, counters end in
    /// `_total`, histograms in `_seconds`/`_bytes` with monotone `le` and cumulative
    /// bucket counts ending in `+Inf` = `_count`.
    static func validateExposition(_ text: String) throws -> [String: Family] {
        XCTAssertTrue(text.hasSuffix("\n"), "ends with a line feed")
        let nameRE = try NSRegularExpression(pattern: "^[a-zA-Z_:][a-zA-Z0-9_:]*$")
        func valid(_ n: String) -> Bool { nameRE.firstMatch(in: n, range: NSRange(n.startIndex..., in: n)) != nil }
        var families: [String: Family] = [:]
        var order: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ")
                if parts.count >= 2 && parts[1] == "TYPE" {
                    XCTAssertEqual(parts.count, 4, "TYPE line: \(line)")
                    let name = String(parts[2])
                    XCTAssertTrue(valid(name), "name \(name)")
                    XCTAssertNil(families[name], "one TYPE line for \(name)")
                    XCTAssertTrue(["counter", "gauge", "histogram", "summary", "untyped"].contains(String(parts[3])), String(line))
                    families[name] = Family(type: String(parts[3]))
                    order.append(name)
                }
                continue
            }
            let nameEnd = line.firstIndex { $0 == "{" || $0 == " " } ?? line.endIndex
            let name = String(line[..<nameEnd])
            XCTAssertTrue(valid(name), "sample name: \(line)")
            var rest = line[nameEnd...]
            var labels = ""
            if rest.hasPrefix("{") {
                guard let close = rest.firstIndex(of: "}") else { XCTFail("labels: \(line)"); continue }
                labels = String(rest[rest.index(after: rest.startIndex)..<close])
                for pair in labels.split(separator: ",") {
                    XCTAssertNotNil(pair.range(of: #"^[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"$"#, options: .regularExpression), "label \(pair)")
                }
                rest = rest[rest.index(after: close)...]
            }
            let fields = rest.split(separator: " ")
            guard let v = fields.first.flatMap({ Double($0) }) ?? (fields.first == "+Inf" ? .infinity : nil) else {
                XCTFail("value: \(line)"); continue
            }
            // The family is the name itself or, for histograms, without _bucket/_sum/_count.
            let family = families[name] != nil ? name
                : ["_bucket", "_sum", "_count"].compactMap { s in name.hasSuffix(s) ? String(name.dropLast(s.count)) : nil }
                    .first { families[$0]?.type == "histogram" }
            guard let f = family, order.last == f else { XCTFail("sample before/outside its TYPE: \(line)"); continue }
            families[f]!.samples.append((name, labels, v))
        }
        for (name, f) in families {
            XCTAssertTrue(name.hasPrefix("relay_"), name)
            XCTAssertFalse(f.samples.isEmpty, "\(name) has samples")
            switch f.type {
            case "counter":
                XCTAssertTrue(name.hasSuffix("_total"), "counter \(name) ends in _total")
                XCTAssertTrue(f.samples.allSatisfy { $0.value >= 0 })
            case "gauge":
                XCTAssertFalse(name.hasSuffix("_total"), name)
            case "histogram":
                XCTAssertTrue(name.hasSuffix("_seconds") || name.hasSuffix("_bytes"), "histogram \(name) has a unit")
                let buckets = f.samples.filter { $0.name == name + "_bucket" }
                let les = buckets.map { b -> Double in
                    let v = b.labels.replacingOccurrences(of: "le=\"", with: "").replacingOccurrences(of: "\"", with: "")
                    return v == "+Inf" ? .infinity : Double(v) ?? .nan
                }
                XCTAssertEqual(les.last, .infinity, "\(name) ends with le=\"+Inf\"")
                XCTAssertEqual(les, les.sorted(), "\(name) le increasing")
                XCTAssertEqual(Set(les).count, les.count, "\(name) le unique")
                let counts = buckets.map(\.value)
                XCTAssertEqual(counts, counts.sorted(), "\(name) cumulative bucket counts are monotone")
                XCTAssertEqual(counts.last, f.samples.first { $0.name == name + "_count" }?.value, "\(name) +Inf = _count")
                XCTAssertNotNil(f.samples.first { $0.name == name + "_sum" }, "\(name)_sum")
            default: break
            }
        }
        return families
    }
}
