import Foundation
import RelayTestSupport
import RelayTestKit
import XCTest

/// docs/PROTOCOL.md §4.3: every 503 the relay answers before a stream carries `Retry-After`,
/// a whole number of seconds drawn from 1–3 for each response, so clients refused together do
/// not retry together.
final class OverloadRetryAfterTests: RelayTestCase {
    private func retryAfter(_ r: HTTPResponse, _ what: String, file: StaticString = #filePath, line: UInt = #line) -> Int? {
        let v = r.header("Retry-After")
        let n = v.flatMap { Int($0) }
        XCTAssertTrue(n.map { (1...3).contains($0) } ?? false, "\(what): Retry-After of 1–3 s, got \(v ?? "none")",
                      file: file, line: line)
        return n
    }

    func testRefusalsAtTheConnectionLimitCarrySpreadRetryAfters() throws {
        let relay = try startRelay(["RELAY_MAX_CONNECTIONS": "1", "RELAY_SIMULATED_TOKENS_PER_SECOND": "5"])
        let token = RelayProcess.token()
        let open = try Chat.start(port: relay.port, token: token, maxTokens: 200)
        defer { open.close() }
        XCTAssertNotNil(try open.nextEvent(), "the one allowed stream is live")
        var seen: [Int] = []
        for i in 0..<24 {
            let r = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                           headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                           body: Chat.body(maxTokens: 5))
            XCTAssertEqual(r.status, 503, "refusal \(i)")
            XCTAssertEqual(r.errorCode, "not_ready")
            if let n = retryAfter(r, "refusal \(i)") { seen.append(n) }
        }
        // 24 draws from 3 values: all equal with probability 3 × 3⁻²⁴.
        XCTAssertGreaterThan(Set(seen).count, 1, "the delays differ between responses: \(seen)")
    }

    func testRefusalsWithoutRedisCarryRetryAfter() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        redis.kill()
        var refused: HTTPResponse?
        try eventually(15, "a POST refused while Redis is away") {
            let r = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                           headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                           body: Chat.body(maxTokens: 5))
            refused = r
            return r.status == 503
        }
        if let r = refused {
            XCTAssertEqual(r.errorCode, "not_ready")
            _ = retryAfter(r, "POST without Redis")
        }
        let ready = try HTTPClient.request(port: relay.port, method: "GET", path: "/readyz")
        XCTAssertEqual(ready.status, 503)
        _ = retryAfter(ready, "/readyz without Redis")
    }

    func testTheGatesPendingRequestRefusalCarriesRetryAfter() throws {
        let relay = try startRelay(["RELAY_WORKERS": "1", "RELAY_MAX_PENDING_REQUESTS": "1"])
        let partial = try RawConnection(port: relay.port)
        try partial.send("GET /healthz HTTP/1.1\r\n")
        var refused = ""
        try eventually(10, "a second partial request refused") {
            let c = try RawConnection(port: relay.port)
            try c.send("GET /healthz HTTP/1.1\r\n")
            refused = String(decoding: c.readToEnd(timeout: 2), as: UTF8.self)
            return !refused.isEmpty
        }
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 503 "), refused)
        XCTAssertNotNil(refused.range(of: "\r\nRetry-After: [123]\r\n", options: .regularExpression),
                        "Retry-After of 1–3 s: \(refused)")
    }
}
