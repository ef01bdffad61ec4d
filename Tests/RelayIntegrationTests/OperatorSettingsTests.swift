import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// Operator settings (docs/CONFIGURATION.md) observed where they take effect — `RELAY_DRAIN_TIMEOUT`
/// expiring, `RELAY_REVOCATION_TTL`, a non-default `RELAY_BUFFER_EVENTS` — and refusing
/// an address already in use. Each is observed where it takes effect (the exit, a Redis
/// key's PTTL, XLEN and the resume edge, the start-up error).
final class OperatorSettingsTests: RelayTestCase {
    static let adminKey = "admin-key-for-settings-tests-0123456789"

    /// SIGTERM with `RELAY_DRAIN_TIMEOUT=1s` while an answer needs ~50 s more, takeovers off
    /// (`RELAY_MAX_CONTINUATIONS=0`; with them on it hands over: `TakeoverTests`): the drain
    /// gives up after the timeout, the generation ends with `upstream_lost` in its stream
    /// (state `failed`), the relay logs the timeout and exits 0 — not before 1 s and long
    /// before the answer could have finished.
    func testDrainTimeoutExpiresAndEndsTheRemainingGeneration() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20", "RELAY_DRAIN_TIMEOUT": "1s", "RELAY_MAX_CONTINUATIONS": "0"])
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, maxTokens: 1000)
        for _ in 0..<2 { _ = try XCTUnwrap(try c.nextEvent()) }
        let sigterm = Date()
        kill(relay.process.processIdentifier, SIGTERM)
        XCTAssertEqual(relay.terminate(timeout: 30), 0, "exit 0 after the drain timeout: \(relay.log.suffix(2000))")
        let took = Date().timeIntervalSince(sigterm)
        XCTAssertGreaterThanOrEqual(took, 0.95, "the drain waited RELAY_DRAIN_TIMEOUT")
        XCTAssertLessThan(took, 15, "the drain ended at its timeout, not with the answer (~50 s)")
        XCTAssertTrue(relay.log.contains("drain timeout"), "the timeout is logged")
        let meta = streamKey(id, "meta")
        XCTAssertEqual(try redis.cli("HGET", meta, "state"), "failed")
        let lastSeq = Int(try redis.cli("HGET", meta, "last_seq")) ?? 0
        XCTAssertLessThan(lastSeq, 500, "cut long before the end")
        let last = try redis.cli("XREVRANGE", streamKey(id, "events"), "+", "-", "COUNT", "1")
        XCTAssertTrue(last.contains("upstream_lost"), "the stream ends with upstream_lost: \(last)")
        c.close()
    }

    /// The marker of a revoked session lives `RELAY_REVOCATION_TTL`: 90 s when revoked
    /// through the admin route of a relay so configured, 45 s through `stream-relay
    /// revoke` with the variable set (the marker's PTTL in Redis).
    func testRevocationMarkerLivesForTheRevocationTTL() throws {
        let relay = try startRelay(["RELAY_ADMIN_KEY": Self.adminKey, "RELAY_REVOCATION_TTL": "90s"])
        let sid = "ttl-\(UUID().uuidString.prefix(8))"
        let r = try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                                       headers: [("Authorization", "Bearer \(Self.adminKey)")])
        XCTAssertEqual(r.status, 202)
        let pttl = Int(try redis.cli("PTTL", "relay:revoked:{\(sid)}")) ?? -1
        XCTAssertTrue((80_000...90_000).contains(pttl), "admin route: marker PTTL \(pttl) ms, RELAY_REVOCATION_TTL 90 s")
        XCTAssertEqual(try attempt(relay, RelayProcess.token(sid: sid)), 401, "the revoked session is refused")

        let cliSid = "ttl-cli-\(UUID().uuidString.prefix(8))"
        let cli = try ToolProcess.run(TestPaths.relayBinary, ["revoke", cliSid],
                                      environment: ChildEnvironment.minimal(["REDIS_URL": redis.url, "RELAY_REVOCATION_TTL": "45s"]))
        XCTAssertEqual(cli.status, 0, cli.output)
        let cliPTTL = Int(try redis.cli("PTTL", "relay:revoked:{\(cliSid)}")) ?? -1
        XCTAssertTrue((35_000...45_000).contains(cliPTTL), "revoke command: marker PTTL \(cliPTTL) ms, RELAY_REVOCATION_TTL 45 s")
    }

    func attempt(_ relay: RelayProcess, _ token: String) throws -> Int {
        try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                               headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                               body: Chat.body(maxTokens: 2)).status
    }

    /// `RELAY_BUFFER_EVENTS=30`: a 101-event stream keeps exactly 30 entries (72…101,
    /// XADD MAXLEN). With lossless resume off, a resume needing entry 72 (Last-Event-ID
    /// 71) is served from the window and one needing entry 71 (Last-Event-ID 70) is 409
    /// `resume_gap`; with it on, the same resume gets every missing event back from the text.
    func testNonDefaultBufferEventsCapsTheStreamAndMovesTheResumeEdge() throws {
        let token = RelayProcess.token()
        let auth = ("Authorization", "Bearer \(token)")
        for lossless in ["off", "on"] {
            let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_BUFFER_EVENTS": "30",
                                        "RELAY_LOSSLESS_RESUME": lossless])
            let id = Chat.newID()
            let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 100).readAll()
            XCTAssertEqual(all.count, 101)
            XCTAssertEqual(try redis.cli("XLEN", streamKey(id, "events")), "30", "lossless \(lossless): MAXLEN 30")
            let oldest = try redis.cli("XRANGE", streamKey(id, "events"), "-", "+", "COUNT", "1")
            XCTAssertTrue(oldest.hasPrefix("72-0"), "oldest retained entry 72-0, got \(oldest.prefix(20))")
            let edge = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "71").readAll()
            XCTAssertEqual(edge.map(\.lastEventId), (72...101).map(String.init), "lossless \(lossless): the window's edge")
            if lossless == "off" {
                let gap = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                                 headers: [auth, ("Last-Event-ID", "70")])
                XCTAssertEqual(gap.status, 409, "one event behind the window: \(gap.text)")
                XCTAssertEqual(gap.errorCode, "resume_gap")
            } else {
                let behind = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "10").readAll()
                XCTAssertEqual(Chat.text(Array(all.prefix(10))) + Chat.text(behind), referenceText(maxTokens: 100),
                               "catch-up from behind the window is byte-identical")
                XCTAssertEqual(behind.last?.lastEventId, "101")
                XCTAssertEqual(behind.map(\.lastEventId), all[10...].map(\.lastEventId), "every missing event, at its own id")
            }
        }
    }

    /// A second relay on an address where one already listens exits non-zero with a
    /// clear error instead of sharing the port (SO_REUSEPORT) — and the first relay
    /// keeps serving.
    func testRefusesAnAddressAlreadyInUse() throws {
        let first = try startRelay()
        let second = try ToolProcess.run(TestPaths.relayBinary, ["serve"], environment: ChildEnvironment.minimal([
            "RELAY_LISTEN": "127.0.0.1:\(first.port)", "REDIS_URL": redis.url, "RELAY_JWT_SECRET": RelayProcess.secret,
            "RELAY_WORKERS": "1"]), timeout: 20)
        XCTAssertNotEqual(second.status, 0, "a second relay on the same port must not start: \(second.output)")
        XCTAssertTrue(second.output.contains("cannot bind 127.0.0.1:\(first.port)"), second.output)
        XCTAssertTrue(second.output.contains("in use"), "names the cause: \(second.output)")
        XCTAssertEqual(try Chat.start(port: first.port, token: RelayProcess.token(), maxTokens: 3).readAll().count, 4,
                       "the first relay still serves")
    }
}
