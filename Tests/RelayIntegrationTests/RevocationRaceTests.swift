import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// A revocation (docs/PROTOCOL.md "Revocation") racing a POST or a resume of the same
/// session, sent through
/// the other instance at a random 0–10 ms offset, is never missed: the request gets
/// 401, or its stream ends with `session_revoked` — no answer runs on.
final class RevocationRaceTests: RelayTestCase {
    static let adminKey = "admin-key-for-tests-0123456789"

    /// How one raced request ended.
    enum Outcome: Equatable { case refused401, cut, missed(String) }

    /// Reads `c` until its terminal event; a stream still open 3 s after the revoke
    /// was answered (its generation would run for ~20 s more) has missed it.
    static func outcome(_ c: SSEConnection?) -> Outcome {
        guard let c else { return .missed("no response") }
        if c.status == 401 { return .refused401 }
        guard c.status == 200 else { return .missed("status \(c.status)") }
        while let e = try? c.nextEvent(timeout: 3) {
            if e.data.contains("\"session_revoked\"") { return .cut }
            if e.data.hasPrefix("{\"type\":\"done\"") || e.data.hasPrefix("{\"type\":\"error\"") { return .missed(e.data) }
        }
        return .missed("no session_revoked within 3 s")
    }

    func testRevocationRacingPostsAndResumesAcrossInstancesIsNeverMissed() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_ADMIN_KEY": Self.adminKey]
        let ports = [try startRelay(env).port, try startRelay(env).port]
        let trials = 600
        let results = LockedBox([String: Int]())
        let misses = LockedBox([String]())
        let seed = UInt64(Date().timeIntervalSince1970)
        print("revocation race seed \(seed)")
        let t0 = Date()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var rng = SplitMix64(seed: seed &+ UInt64(worker))
            for trial in stride(from: worker, to: trials, by: 8) {
                let sid = "race-\(trial)-\(UUID().uuidString.prefix(6))"
                let token = RelayProcess.token(sid: sid)
                let on = Int(rng.next() % 2)
                let resumeTrial = trial % 2 == 1
                var existingID: String?
                if resumeTrial {
                    // A stream of the session already runs; the race is with a resume.
                    let c = try? Chat.start(port: ports[1 - on], token: token, maxTokens: 1000)
                    existingID = c?.header("X-Request-Id")
                    _ = try? c?.nextEvent()
                    c?.close()
                }
                let offsetUs = UInt32(rng.next() % 10_001)
                let group = DispatchGroup()
                let raced = LockedBox<SSEConnection?>(nil)
                let existing = existingID, port = ports[on]
                DispatchQueue.global().async(group: group) {
                    let c = existing.map { try? Chat.resume(port: port, token: token, requestID: $0, lastEventID: "0") }
                        ?? (try? Chat.start(port: port, token: token, maxTokens: 1000))
                    raced.mutate { $0 = c }
                }
                usleep(offsetUs)   // pacing on purpose: the revoke lands a random 0–10 ms after the raced request
                let revoke = try? HTTPClient.request(port: ports[1 - on], method: "POST", path: "/admin/sessions/\(sid)/revoke",
                                                     headers: [("Authorization", "Bearer \(Self.adminKey)")])
                group.wait()
                let o = revoke?.status == 202 ? Self.outcome(raced.value) : .missed("revoke answered \(revoke?.status ?? -1)")
                raced.value?.close()
                let kind = (resumeTrial ? "resume " : "post ") + { switch o { case .refused401: return "401"; case .cut: return "cut"; case .missed: return "MISSED" } }()
                results.mutate { $0[kind, default: 0] += 1 }
                if case .missed(let why) = o { misses.mutate { $0.append("trial \(trial) (\(kind), offset \(offsetUs) µs): \(why)") } }
            }
        }
        let elapsed = Date().timeIntervalSince(t0)
        print("revocation race over \(trials) trials in \(String(format: "%.1f", elapsed)) s: \(results.value.sorted { $0.key < $1.key })")
        XCTAssertEqual(misses.value, [], "every raced request was refused or cut")
        XCTAssertEqual(results.value.values.reduce(0, +), trials)
    }

    /// A revocation published while the worker's pub/sub connection is down reaches no
    /// subscriber; when the connection is back the worker checks the markers of the
    /// sessions it serves and cuts the revoked one.
    func testRevocationPublishedWhileThePubSubConnectionIsDownStillCuts() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20", "RELAY_WORKERS": "1"])
        let sid = "outage-\(UUID().uuidString.prefix(8))"
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(sid: sid), maxTokens: 1000)
        _ = try XCTUnwrap(try c.nextEvent())
        // Drop the pub/sub connection (it reconnects after 100 ms), then revoke the way
        // the revoke route does: marker first, then the message — which nobody receives.
        try redis.cli("CLIENT", "KILL", "TYPE", "pubsub")
        let receivers = try redis.cli("EVAL", "redis.call('SET', KEYS[1], '1', 'PX', '60000') return redis.call('PUBLISH', 'relay:revocations', ARGV[1])",
                                      "1", "relay:revoked:{\(sid)}", sid)
        XCTAssertEqual(receivers, "0", "the revocation was published while no worker listened")
        var cut = false
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, let e = try c.nextEvent(timeout: 5) {
            if e.data.contains("\"session_revoked\"") { cut = true; break }
        }
        XCTAssertTrue(cut, "the stream ends with session_revoked after the pub/sub connection is back")
    }
}
