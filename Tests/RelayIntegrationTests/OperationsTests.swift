import Foundation
import RelayTestKit
import RelayTestSupport
import XCTest

/// Operations (docs/OPERATIONS.md): the `/metrics` exposition passes `promtool check metrics`, the alert
/// rules pass `promtool check rules` and their unit tests, and every metric the Grafana
/// dashboard and the alerts query is one a live relay exports.
final class OperationsTests: RelayTestCase {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let prometheusDir = repoRoot.appendingPathComponent("deploy/prometheus")
    static var promtool: String { TestPaths.which("promtool") }

    /// A relay that has run one stream, so counters and histograms carry data.
    func relayWithTraffic() throws -> RelayProcess {
        let relay = try startRelay()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(sub: "ops"), maxTokens: 20)
        XCTAssertFalse(Chat.text(try c.readAll()).isEmpty)
        return relay
    }

    func scrape(_ relay: RelayProcess) throws -> String {
        let r = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics")
        XCTAssertEqual(r.status, 200)
        return r.text
    }

    /// Metric names in an exposition: each family from `# TYPE`, plus a histogram's
    /// `_bucket`, `_sum` and `_count` series.
    static func exportedNames(_ exposition: String) -> Set<String> {
        var names = Set<String>()
        for line in exposition.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            guard parts.count == 4 else { continue }
            let name = String(parts[2])
            names.insert(name)
            if parts[3] == "histogram" { for s in ["_bucket", "_sum", "_count"] { names.insert(name + s) } }
        }
        return names
    }

    /// The `relay_…` metric names a PromQL expression uses.
    static func metricNames(in expr: String) -> [String] {
        let re = try! NSRegularExpression(pattern: "\\brelay_[a-z0-9_]+")
        let ns = expr as NSString
        return re.matches(in: expr, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range) }
    }

    func testMetricsExpositionPassesPromtoolCheckMetrics() throws {
        let relay = try relayWithTraffic()
        let text = try scrape(relay)
        let families = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        let helped = Set(text.split(separator: "\n").filter { $0.hasPrefix("# HELP ") }.map { $0.split(separator: " ")[2] })
        XCTAssertGreaterThanOrEqual(families.count, 18, "metric families: \(families)")
        for f in families { XCTAssertTrue(helped.contains(f), "\(f) has no # HELP") }
        let r = try ToolProcess.run(Self.promtool, ["check", "metrics"], input: Data(text.utf8))
        XCTAssertEqual(r.status, 0, "promtool check metrics:\n\(r.output)\n--- exposition:\n\(text)")
        XCTAssertEqual(r.output.trimmingCharacters(in: .whitespacesAndNewlines), "", "promtool check metrics reported problems")
    }

    func testAlertRulesPassPromtoolCheckAndUnitTests() throws {
        let check = try ToolProcess.run(Self.promtool, ["check", "rules", "alerts.yaml"], directory: Self.prometheusDir)
        XCTAssertEqual(check.status, 0, check.output)
        XCTAssertTrue(check.output.contains("SUCCESS: 6 rules found"), check.output)
        let test = try ToolProcess.run(Self.promtool, ["test", "rules", "alerts_test.yaml"], directory: Self.prometheusDir)
        XCTAssertEqual(test.status, 0, test.output)
        XCTAssertTrue(test.output.contains("SUCCESS"), test.output)
    }

    func testDashboardAndAlertsQueryOnlyExportedMetrics() throws {
        let relay = try relayWithTraffic()
        let exported = Self.exportedNames(try scrape(relay))
        XCTAssertTrue(exported.contains("relay_live_connections"), "scrape: \(exported.sorted())")

        let data = try Data(contentsOf: Self.repoRoot.appendingPathComponent("deploy/grafana/streamrelay.json"))
        let dashboard = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try XCTUnwrap(dashboard["panels"] as? [[String: Any]])
        XCTAssertGreaterThanOrEqual(panels.count, 10)
        var queried = Set<String>()
        for p in panels {
            let title = p["title"] as? String ?? "?"
            let targets = try XCTUnwrap(p["targets"] as? [[String: Any]], "panel \(title) has no targets")
            XCTAssertFalse(targets.isEmpty, "panel \(title) has no queries")
            for t in targets {
                let expr = try XCTUnwrap(t["expr"] as? String, "panel \(title): query without expr")
                let names = Self.metricNames(in: expr)
                XCTAssertFalse(names.isEmpty, "panel \(title): \(expr) names no relay metric")
                for n in names {
                    XCTAssertTrue(exported.contains(n), "panel \(title) queries \(n), which /metrics does not export")
                    queried.insert(n)
                }
            }
        }
        let alerts = try String(contentsOf: Self.prometheusDir.appendingPathComponent("alerts.yaml"), encoding: .utf8)
        let alertNames = Self.metricNames(in: alerts)
        XCTAssertFalse(alertNames.isEmpty)
        for n in alertNames { XCTAssertTrue(exported.contains(n), "alerts.yaml uses \(n), which /metrics does not export") }
        // The dashboard covers the families the alerts are about.
        for n in ["relay_workers_redis_connected", "relay_workers_ready", "relay_upstream_errors_total",
                  "relay_slow_consumer_disconnects_total", "relay_upstream_time_to_first_token_seconds_bucket",
                  "relay_budget_refusals_total"] {
            XCTAssertTrue(queried.contains(n), "no dashboard panel shows \(n)")
        }
    }

    /// `relay_workers_*` reflect each worker's Redis state: with Redis gone the
    /// connected and ready counts fall below the worker count (what the alerts fire on).
    func testWorkerGaugesFollowRedisAvailability() throws {
        let relay = try startRelay(["RELAY_WORKERS": "2"])
        func gauges() throws -> [Double?] {
            try ["relay_workers", "relay_workers_redis_connected", "relay_workers_ready"].map { try metric(relay, $0) }
        }
        try eventually(10, "both workers report Redis connected and ready") { try gauges() == [2, 2, 2] }
        redis.stop()
        try eventually(10, "the workers report Redis lost") { try gauges() == [2, 0, 0] }
    }

    /// Budget refusals are counted in `relay_budget_refusals_total`.
    func testBudgetRefusalsAreCounted() throws {
        let relay = try startRelay(["RELAY_BUDGETS": "free=1,pro=1"])
        let token = RelayProcess.token(sub: "broke-\(UUID().uuidString.prefix(6))")
        let first = try Chat.start(port: relay.port, token: token, maxTokens: 20)
        _ = try? first.readAll()
        try eventually(10, "a 429 token_budget_exhausted once the budget is used") {
            let r = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                           headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                           body: Array(#"{"messages":[{"role":"user","content":"hi"}]}"#.utf8))
            return r.status == 429
        }
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(try metric(relay, "relay_budget_refusals_total")), 1)
    }
}

/// A relay's own log lines end to end (not a terminal, so JSON; docs/OPERATIONS.md "Logs").
final class RelayLogLineTests: RelayTestCase {
    func testRelayLogLinesAreJSONWithRFC3339TimesAndNoSecrets() throws {
        let secretPrompt = "confidential clause about /etc/secret-plans"
        let sid = "raw-session-\(UUID().uuidString)"
        let relay = try startRelay(["RELAY_LOG_LEVEL": "debug"])
        let token = RelayProcess.token(sub: "logger", sid: sid)
        let body = #"{"messages":[{"role":"user","content":"\#(secretPrompt)"}],"max_tokens":20}"#
        let r = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                       headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                       body: Array(body.utf8))
        XCTAssertEqual(r.status, 200)
        try eventually(10, "the per-stream log line") { relay.log.contains("\"msg\":\"stream\"") }
        let ts = try NSRegularExpression(pattern: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#)
        let lines = relay.log.split(separator: "\n")
        XCTAssertGreaterThanOrEqual(lines.count, 3)
        var levels = Set<String>()
        for line in lines {
            let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            let t = try XCTUnwrap(obj["ts"] as? String, "no ts: \(line)")
            XCTAssertEqual(ts.numberOfMatches(in: t, range: NSRange(t.startIndex..., in: t)), 1, "ts \(t)")
            levels.insert(obj["level"] as? String ?? "?")
            XCTAssertNotNil(obj["msg"] as? String)
            XCTAssertFalse(line.contains("\\/"), "escaped slash: \(line)")
            XCTAssertFalse(line.contains("secret-plans"), "message content in a log line: \(line)")
            XCTAssertFalse(line.contains(sid), "raw session id in a log line: \(line)")
            XCTAssertFalse(line.contains(token), "token in a log line: \(line)")
        }
        XCTAssertTrue(levels.contains("debug"), "RELAY_LOG_LEVEL=debug shows debug lines: \(levels)")
        XCTAssertTrue(relay.log.contains(#""redis":"redis://"#) || relay.log.contains(#""redis":"unix:///"#), "unescaped URL in the listening line")
    }
}
