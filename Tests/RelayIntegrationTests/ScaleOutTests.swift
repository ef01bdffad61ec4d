import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// Issue 6, "The proof on this machine": real nginx (deploy/nginx.conf) in front of
/// three relay processes and one real redis-server; instances die, drain and restart
/// under load; Redis restarts; a slow reader is cut; /metrics and the drain.
final class ScaleOutTests: RelayTestCase {
    /// A thread-safe list of results and a stop flag, shared with client threads.
    final class Shared: @unchecked Sendable {
        private let lock = NSLock()
        private var _results: [ResumedStreamResult] = []
        private var _stop = false
        private var _running = 0
        var results: [ResumedStreamResult] { lock.withLock { _results } }
        var stop: Bool {
            get { lock.withLock { _stop } }
            set { lock.withLock { _stop = newValue } }
        }
        var running: Int { lock.withLock { _running } }
        func add(_ r: ResumedStreamResult) { lock.withLock { _results.append(r) } }
        func enter() { lock.withLock { _running += 1 } }
        func leave() { lock.withLock { _running -= 1 } }
    }

    private func pro(_ sub: String) -> String { RelayProcess.token(sub: sub, tier: "pro") }

    // MARK: Scenario A

    /// 100 clients stream through nginx with random drops and resumes; one relay gets
    /// SIGKILL and another SIGTERM mid-stream; then all three are restarted one by one
    /// (new processes on the same ports). Owner survived → byte-identical text;
    /// owner killed → `upstream_lost` within 5 s; nobody hangs.
    func testThreeRelaysBehindNginxSurviveKillDrainAndRollingRestart() throws {
        try XCTSkipUnless(NginxProcess.isAvailable, "nginx is not installed")
        let began = Date()
        let clients = 100
        let maxTokens = 200
        let rate = "60"
        let ports = try (0..<3).map { _ in try FreePort.find() }
        var incarnation = [0, 0, 0]
        func instanceName(_ i: Int) -> String { "relay-\(i + 1).\(incarnation[i])" }
        func launch(_ i: Int) throws -> RelayProcess {
            try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": rate, "RELAY_LISTEN": "127.0.0.1:\(ports[i])",
                            "RELAY_INSTANCE": instanceName(i), "RELAY_HEARTBEAT": "2s", "RELAY_WORKERS": "2"])
        }
        var relays = try (0..<3).map(launch)
        let nginx = try NginxProcess(upstreams: ports)
        defer {
            if let keep = ProcessInfo.processInfo.environment["RELAY_TEST_KEEP_NGINX_LOG"] {
                try? nginx.accessLog.write(toFile: keep, atomically: true, encoding: .utf8)
            }
            nginx.stop()
        }
        let reference = Chat.text(try Chat.start(port: nginx.port, token: pro("reference"), maxTokens: maxTokens).readAll(timeout: 20))
        XCTAssertGreaterThan(reference.utf8.count, 500)

        let shared = Shared()
        let lbPort = nginx.port
        let hardDeadline = Date().addingTimeInterval(90)
        var threads: [Thread] = []
        for n in 0..<clients {
            let token = pro("user-\(n)")
            let t = Thread {
                shared.enter()
                defer { shared.leave() }
                usleep(UInt32(n) * 20_000)  // starts spread over 2 s
                // Streams one after another until the restarts are over (at least one).
                repeat {
                    let client = ResumingStreamClient(port: lbPort, token: token, maxTokens: maxTokens,
                                                      deadline: min(hardDeadline, Date().addingTimeInterval(45)))
                    shared.add(client.run())
                } while !shared.stop
            }
            t.stackSize = 1 << 20
            threads.append(t)
            t.start()
        }

        // Mid-stream: SIGKILL relay 1, SIGTERM relay 2 (its drain runs in the background).
        Thread.sleep(forTimeInterval: 3.0)
        let killedName = instanceName(0)
        let killedAt = Date()
        relays[0].kill9()
        kill(relays[1].process.processIdentifier, SIGTERM)
        let drainingAt = Date()
        // Rolling restart: relay 1 (dead) at once, relay 2 once its drain is over,
        // then relay 3 (SIGTERM, drain, new process).
        Thread.sleep(forTimeInterval: 1.0)
        incarnation[0] += 1
        relays[0] = try launch(0)
        XCTAssertEqual(relays[1].terminate(timeout: 40), 0, "drained relay 2 exits 0")
        let drainSeconds = Date().timeIntervalSince(drainingAt)
        incarnation[1] += 1
        relays[1] = try launch(1)
        // Like a real rollout, take the next instance down only once the restarted ones
        // are back in rotation: nginx skips an instance for `fail_timeout` (5 s) after a
        // refused connect, and with every instance skipped it answers 503 itself.
        let backInRotation = killedAt.addingTimeInterval(6.5)
        if backInRotation > Date() { Thread.sleep(until: backInRotation) }
        let term3 = Date()
        XCTAssertEqual(relays[2].terminate(timeout: 40), 0, "drained relay 3 exits 0")
        let drain3Seconds = Date().timeIntervalSince(term3)
        incarnation[2] += 1
        relays[2] = try launch(2)
        Thread.sleep(forTimeInterval: 1.0)
        shared.stop = true

        // Every client ends (each stream has its own deadline); none may hang.
        let joinUntil = Date().addingTimeInterval(60)
        while shared.running > 0 && Date() < joinUntil { usleep(50_000) }
        XCTAssertEqual(shared.running, 0, "client threads still running: they hang")

        // Verdicts: owner from the stream's meta (`instance`).
        let results = shared.results
        var lost = 0, survivedOK = 0, lostLatency: [Double] = [], bad: [String] = []
        var owners: [String: Int] = [:]
        for r in results {
            let owner = (try? redis.cli("HGET", "relay:{\(r.requestID)}:meta", "instance")) ?? "?"
            owners[owner, default: 0] += 1
            if r.hung { bad.append("\(r.requestID) hung at seq \(r.lastSeq) (owner \(owner))"); continue }
            if r.duplicates > 0 { bad.append("\(r.requestID): \(r.duplicates) duplicated events") }
            if owner == killedName && r.terminal == "error:upstream_lost" {
                lost += 1
                let latency = r.terminalAt!.timeIntervalSince(killedAt)
                lostLatency.append(latency)
                if latency > 5.5 { bad.append("\(r.requestID): upstream_lost \(String(format: "%.1f", latency)) s after the kill") }
                if !reference.hasPrefix(r.text) { bad.append("\(r.requestID): text before upstream_lost is not a prefix of the answer") }
            } else if r.terminal == "done" && r.text == reference {
                survivedOK += 1
            } else {
                bad.append("\(r.requestID) owner \(owner): terminal \(r.terminal ?? "nil"), \(r.text.utf8.count) of \(reference.utf8.count) bytes, identical: \(r.text == reference), refusals \(r.refusals)")
            }
        }
        let streams = results.count
        let resumes = results.reduce(0) { $0 + $1.resumes }
        let drops = results.reduce(0) { $0 + $1.drops }
        let bytes = results.reduce(0) { $0 + $1.bytes }
        let duplicated = results.reduce(0) { $0 + $1.duplicates }
        let catchUps = results.reduce(0) { $0 + $1.catchUps }
        let cuts = results.reduce(0) { $0 + $1.cuts }
        let timeouts = results.reduce(0) { $0 + $1.timeouts }
        let connectFailures = results.reduce(0) { $0 + $1.connectFailures }
        var refusals: [Int: Int] = [:]
        var refusalBodies: [String: Int] = [:]
        for r in results {
            for s in r.refusals { refusals[s, default: 0] += 1 }
            for b in r.refusalBodies { refusalBodies[b, default: 0] += 1 }
        }
        print("refusals: \(refusalBodies)")
        print("""
        scale-out: streams \(streams) (clients \(clients)), resumes \(resumes) (\(drops) deliberate drops, \(cuts) cut, \(timeouts) timeouts, \(connectFailures) connect failures, \
        refusals \(refusals.sorted { $0.key < $1.key })), \
        bytes \(bytes), byte-identical \(survivedOK), lost \(lost) (upstream_lost, owner \(killedName) SIGKILLed; \
        max \(String(format: "%.2f", lostLatency.max() ?? 0)) s after the kill), duplicated \(duplicated), \
        catch-ups \(catchUps), hung \(results.filter(\.hung).count), failures \(bad.count); \
        drains \(String(format: "%.1f", drainSeconds)) s / \(String(format: "%.1f", drain3Seconds)) s; \
        owners \(owners.sorted { $0.key < $1.key }); \(String(format: "%.1f", Date().timeIntervalSince(began))) s
        """)
        XCTAssertTrue(bad.isEmpty, "\(bad.count) streams failed:\n" + bad.prefix(20).joined(separator: "\n"))
        XCTAssertGreaterThanOrEqual(streams, clients)
        XCTAssertGreaterThan(lost, 0, "some generations were owned by the killed relay")
        XCTAssertGreaterThan(resumes, clients / 2)
        XCTAssertEqual(duplicated, 0)
        for r in relays {
            XCTAssertTrue(r.process.isRunning, "restarted relay died (status \(r.process.isRunning ? 0 : r.process.terminationStatus)): \(r.log.suffix(3000))")
        }
    }
}
