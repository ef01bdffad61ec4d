import Foundation
import RelayTestSupport
import RelayTestKit
import XCTest

/// docs/PROTOCOL.md §11.3: a request still incomplete `RELAY_REQUEST_TIMEOUT` after its first
/// byte is answered `408 request_timeout` (the relay's JSON error, §8) and then closed, whether
/// its head, its `Content-Length` body or its chunked body is unfinished. Each request here
/// arrives in one packet and nothing follows, so the last read is the first byte: the case in
/// which a read-idle timeout of the same length would close the connection without an answer.
final class RequestTimeoutTests: RelayTestCase {
    private let timeoutSeconds = 2.0

    /// Sends `partial` in one packet, then reads until the relay closes; checks the 408 JSON
    /// answer, that it came no earlier than the request timeout, and the timeout counter.
    private func assertAnswered408(_ partial: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "\(Int(timeoutSeconds))s"])
        let c = try RawConnection(port: relay.port)
        let t0 = Date()
        try c.send(partial)
        let answer = String(decoding: c.readToEnd(timeout: 15), as: UTF8.self)
        let elapsed = Date().timeIntervalSince(t0)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 408 "), "408 before the close, got: \(answer.debugDescription)", file: file, line: line)
        XCTAssertTrue(answer.contains("\r\nConnection: close\r\n"), answer, file: file, line: line)
        XCTAssertTrue(answer.contains("\r\nContent-Type: application/json\r\n"), answer, file: file, line: line)
        if let r = answer.range(of: "\r\n\r\n") {
            let obj = try? JSONSerialization.jsonObject(with: Data(answer[r.upperBound...].utf8)) as? [String: Any]
            let error = obj?["error"] as? [String: Any]
            XCTAssertEqual(error?["code"] as? String, "request_timeout", answer, file: file, line: line)
            XCTAssertNotNil(error?["message"] as? String, answer, file: file, line: line)
        }
        // Not before the timeout (50 ms for timer rounding); the upper bound is loose for a
        // loaded 2-core machine.
        XCTAssertGreaterThanOrEqual(elapsed, timeoutSeconds - 0.05, "cut before RELAY_REQUEST_TIMEOUT", file: file, line: line)
        XCTAssertLessThan(elapsed, timeoutSeconds + 8, "cut long after RELAY_REQUEST_TIMEOUT", file: file, line: line)
        XCTAssertEqual(try metric(relay, "relay_request_timeouts_total"), 1, "counted", file: file, line: line)
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status, 200,
                       file: file, line: line)
    }

    func testIncompleteHeadGets408BeforeTheClose() throws {
        try assertAnswered408("POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Le")
    }

    func testContentLengthBodyWithNoBytesSentGets408BeforeTheClose() throws {
        try assertAnswered408("POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
    }

    func testPartialContentLengthBodyGets408BeforeTheClose() throws {
        try assertAnswered408("POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"messages\"")
    }

    func testUnfinishedChunkedBodyGets408BeforeTheClose() throws {
        try assertAnswered408("POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n{\"messages\"\r\n5\r\n:[")
    }

    func testChunkedBodyWithNoChunksGets408BeforeTheClose() throws {
        try assertAnswered408("POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    }

    /// A request pipelined behind a complete one and left unfinished gets the 408 too; the
    /// first is answered before it.
    func testUnfinishedRequestBehindACompleteOneGets408AfterTheFirstAnswer() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "\(Int(timeoutSeconds))s"])
        let c = try RawConnection(port: relay.port)
        try c.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nPOST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n")
        let answer = String(decoding: c.readToEnd(timeout: 15), as: UTF8.self)
        let parts = answer.components(separatedBy: "HTTP/1.1 ")
        XCTAssertEqual(parts.count, 3, "two answers: \(answer.debugDescription)")
        XCTAssertTrue(parts.count > 1 && parts[1].hasPrefix("200 "), answer)
        XCTAssertTrue(parts.count > 2 && parts[2].hasPrefix("408 ") && parts[2].contains("\"request_timeout\""), answer)
    }
}
