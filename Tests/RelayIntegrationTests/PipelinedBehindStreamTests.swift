import Foundation
import RelayTestSupport
import RelayTestKit
import XCTest

/// Bytes a client sends after a stream's request, on the same connection (RFC 9112 §9.3.2
/// pipelining; §2.2 empty lines). The stream's response is in progress while they wait, so
/// nothing the relay answers them may land inside it, and an empty line after a request body
/// (which RFC 9112 §2.2 asks servers to ignore before a request line) must not start the
/// whole-request deadline (`RELAY_REQUEST_TIMEOUT`, docs/PROTOCOL.md §11.3) that would cut the
/// stream.
final class PipelinedBehindStreamTests: RelayTestCase {
    private func streamRequest(token: String, body: String) -> String {
        "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
    }

    /// Reads the connection until the relay closes it or `timeout` s pass; the bytes read.
    private func readAll(_ c: RawConnection, timeout: Double) -> String {
        String(decoding: c.readToEnd(timeout: timeout), as: UTF8.self)
    }

    /// A client that ends its POST body with an extra CRLF (an old HTTP stack's habit) gets
    /// its whole stream, running longer than `RELAY_REQUEST_TIMEOUT`, and no 408.
    func testEmptyLineAfterAStreamRequestDoesNotCutTheStreamAtTheRequestTimeout() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "1s", "RELAY_SIMULATED_TOKENS_PER_SECOND": "10",
                                    "RELAY_HEARTBEAT": "1s"])
        let c = try RawConnection(port: relay.port)
        defer { c.close() }
        let body = #"{"messages":[{"role":"user","content":"hello"}],"max_tokens":30}"#
        try c.send(streamRequest(token: RelayProcess.token(sub: "crlf"), body: body) + "\r\n")
        var got = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !got.contains("\"type\":\"done\""), !got.contains("\"type\":\"error\"") {
            guard let bytes = c.read(max: 65_536, timeout: 5) else { break }
            if bytes.isEmpty { break }
            got += String(decoding: bytes, as: UTF8.self)
        }
        XCTAssertTrue(got.hasPrefix("HTTP/1.1 200 "), got)
        XCTAssertFalse(got.contains("HTTP/1.1 408"), "a 408 inside the stream: \(got.debugDescription)")
        XCTAssertTrue(got.contains("\"type\":\"done\""), "the stream ends with done: \(got.debugDescription)")
        XCTAssertEqual(try metric(relay, "relay_request_timeouts_total") ?? 0, 0)
    }

    /// A request left unfinished behind a running stream is not answered inside the stream's
    /// response: when its deadline passes the connection closes without the 408's bytes in
    /// the middle of the stream's chunked body (docs/LIMITS.md).
    func testUnfinishedRequestBehindARunningStreamWritesNo408IntoTheStream() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "1s", "RELAY_SIMULATED_TOKENS_PER_SECOND": "5",
                                    "RELAY_HEARTBEAT": "30s"])
        let c = try RawConnection(port: relay.port)
        defer { c.close() }
        let body = #"{"messages":[{"role":"user","content":"hello"}],"max_tokens":40}"#
        try c.send(streamRequest(token: RelayProcess.token(sub: "partial"), body: body) + "GET /healthz HTTP/1.1\r\nHo")
        let got = readAll(c, timeout: 20)
        XCTAssertTrue(got.hasPrefix("HTTP/1.1 200 "), got)
        XCTAssertFalse(got.contains("HTTP/1.1 408"), "a 408 inside the stream: \(got.debugDescription)")
    }
}

/// A complete request and the first bytes of the next one in the same read (RFC 9112 §9.3.2
/// pipelining): the first is answered at once, not held back with the incomplete head.
final class PipelinedPartialHeadTests: RelayTestCase {
    func testCompleteRequestIsAnsweredAtOnceWhenPartOfTheNextCameInTheSameRead() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "20s"])
        let c = try RawConnection(port: relay.port)
        defer { c.close() }
        try c.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /heal")
        let first = c.read(max: 65_536, timeout: 10).map { String(decoding: $0, as: UTF8.self) } ?? ""
        XCTAssertTrue(first.hasPrefix("HTTP/1.1 200 "), "the healthz answer before the next head is complete: \(first.debugDescription)")
    }

    func testCompleteRequestFollowedByAnEmptyLineIsAnsweredAtOnce() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "20s"])
        let c = try RawConnection(port: relay.port)
        defer { c.close() }
        try c.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n\r\n")
        let first = c.read(max: 65_536, timeout: 10).map { String(decoding: $0, as: UTF8.self) } ?? ""
        XCTAssertTrue(first.hasPrefix("HTTP/1.1 200 "), first.debugDescription)
        // The connection stays usable: the next request, after the empty line, is answered.
        try c.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        let second = c.read(max: 65_536, timeout: 10).map { String(decoding: $0, as: UTF8.self) } ?? ""
        XCTAssertTrue(second.hasPrefix("HTTP/1.1 200 "), second.debugDescription)
    }
}

/// A keep-alive connection left idle after its stream ended is closed after
/// `RELAY_REQUEST_TIMEOUT` like any idle connection (docs/LIMITS.md), not kept for the day
/// the stream lifted evhttp's read timeout to: otherwise each finished stream a client leaves
/// open holds a descriptor that connection shedding never takes back.
final class IdleAfterStreamTests: RelayTestCase {
    func testIdleKeepAliveConnectionAfterAStreamIsClosedAfterTheRequestTimeout() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "1s"])
        let c = try RawConnection(port: relay.port)
        defer { c.close() }
        let body = #"{"messages":[{"role":"user","content":"hello"}],"max_tokens":2}"#
        try c.send("POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(RelayProcess.token(sub: "idle"))\r\n"
                   + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
        var got = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !got.hasSuffix("\r\n0\r\n\r\n") {
            guard let bytes = c.read(max: 65_536, timeout: 5), !bytes.isEmpty else { break }
            got += String(decoding: bytes, as: UTF8.self)
        }
        XCTAssertTrue(got.contains("\"type\":\"done\"") && got.hasSuffix("\r\n0\r\n\r\n"), "the stream ended: \(got.debugDescription)")
        // Idle from now on: the relay closes the connection (end of file) well before 15 s.
        let t0 = Date()
        let rest = c.readToEnd(timeout: 15)
        XCTAssertTrue(rest.isEmpty, String(decoding: rest, as: UTF8.self))
        XCTAssertLessThan(Date().timeIntervalSince(t0), 14, "the idle connection was still open")
    }
}
