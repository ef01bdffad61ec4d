import Foundation
import RelayTestKit
import XCTest
import RelayCore
import RelayHTTP
import RelayTestSupport

/// HTTP/1.1 edges on a real relay (docs/PROTOCOL.md "HTTP/1.1 rules", RFC 9112): the
/// strict HTTP/1.1 gate, the whole-request deadline,
/// the cap on pending requests, and file-descriptor exhaustion.
final class HTTPEdgeTests: RelayTestCase {
    /// One raw exchange: sends `request`, reads to EOF.
    private func exchange(_ relay: RelayProcess, _ request: String, timeout: Double = 10) throws -> String {
        let c = try RawConnection(port: relay.port)
        try c.send(request)
        return String(decoding: c.readToEnd(timeout: timeout), as: UTF8.self)
    }

    private func jsonCode(_ response: String) -> String? {
        guard let r = response.range(of: "\r\n\r\n") else { return nil }
        let body = Data(response[r.upperBound...].utf8)
        let obj = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        return (obj?["error"] as? [String: Any])?["code"] as? String
    }

    func testMalformedRequestsGetJSONErrorsAndTheConnectionCloses() throws {
        let relay = try startRelay()
        let cases: [(String, String, Int, String)] = [
            ("two different Content-Length", "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, "invalid_request"),
            ("Content-Length with Transfer-Encoding", "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "invalid_request"),
            ("missing Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "invalid_request"),
            ("two Host", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "invalid_request"),
            ("whitespace before colon", "GET /healthz HTTP/1.1\r\nHost : a\r\n\r\n", 400, "invalid_request"),
            ("NUL in a value", "GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: a\u{0}b\r\n\r\n", 400, "invalid_request"),
            ("bare CR in a value", "GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n", 400, "invalid_request"),
            ("obsolete line folding", "GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: a\r\n b\r\n\r\n", 400, "invalid_request"),
            ("bad request line", "GET  /healthz HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid_request"),
            ("absolute-form with a bad port", "GET https://x:99999/healthz HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid_request"),
            ("GET with content", "GET /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 25\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n", 400, "invalid_request"),
            ("HEAD with chunked content", "HEAD /healthz HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "invalid_request"),
            ("TRACE", "TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", 405, "method_not_allowed"),
            ("PROPFIND", "PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n", 405, "method_not_allowed"),
            ("body over the limit", "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n", 413, "body_too_large"),
            ("HTTP/2.0 line", "GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n", 505, "http_version_not_supported"),
            ("gzip coding", "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "not_implemented"),
        ]
        for (label, request, status, code) in cases {
            let r = try exchange(relay, request)
            XCTAssertTrue(r.hasPrefix("HTTP/1.1 \(status) "), "\(label): \(r.prefix(80))")
            XCTAssertEqual(jsonCode(r), code, "\(label): JSON error shape: \(r)")
            XCTAssertTrue(r.contains("\r\nContent-Type: application/json\r\n"), label)
            XCTAssertTrue(r.contains("\r\nConnection: close\r\n"), label)
            if status == 405 { XCTAssertTrue(r.contains("\r\nAllow: GET, HEAD, POST, DELETE\r\n"), "\(label): Allow") }
            XCTAssertFalse(r.contains("<html") || r.contains("<HTML"), "\(label): never libevent's HTML page")
        }
        XCTAssertGreaterThanOrEqual(try metric(relay, "relay_request_head_rejections_total") ?? 0, Double(cases.count))
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status, 200)
    }

    /// The stream's bytes are framed once and written through to the socket:
    /// an HTTP/1.1 client gets them as chunks, an HTTP/1.0 client (no chunked coding, the
    /// response ends with the connection) as the bare SSE text. Both decode to the same
    /// events, 1 … n, ending with `done`.
    func testStreamBodyIsChunkedForHTTP11AndBareForHTTP10() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let body = String(decoding: Chat.body(maxTokens: 25), as: UTF8.self)
        func stream(_ version: String) throws -> (head: String, body: [UInt8]) {
            let raw = try exchange(relay, "POST /api/chat/stream \(version)\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
                                   + "Content-Type: application/json\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)",
                                   timeout: 20)
            guard let r = raw.range(of: "\r\n\r\n") else { XCTFail("no header end: \(raw)"); return ("", []) }
            return (String(raw[..<r.lowerBound]), Array(raw[r.upperBound...].utf8))
        }
        func events(_ bytes: [UInt8]) throws -> [SSEMessage] {
            var p = SSEParser()
            return try bytes.withUnsafeBytes { try p.feed($0) }.compactMap { if case .event(let m) = $0 { return m } else { return nil } }
        }
        let v11 = try stream("HTTP/1.1")
        XCTAssertTrue(v11.head.hasPrefix("HTTP/1.1 200 ") && v11.head.contains("Transfer-Encoding: chunked"), v11.head)
        var decoder = ChunkedBodyDecoder()
        var unread = v11.body[...]
        var sse: [UInt8] = []
        decode: while true {
            let step = unread.withUnsafeBytes { decoder.next($0, available: unread.count) }
            switch step {
            case .skip(let n): unread = unread.dropFirst(n)
            case .data(let n): sse += unread.prefix(n); unread = unread.dropFirst(n)
            case .end: break decode
            case .needMore, .malformed: XCTFail("chunked body: \(step)"); break decode
            }
        }
        let chunked = try events(sse)
        assertSequence(chunked)
        XCTAssertEqual(chunked.count, 26, "25 deltas and done")

        let v10 = try stream("HTTP/1.0")
        XCTAssertTrue(v10.head.contains(" 200 ") && !v10.head.contains("Transfer-Encoding"), v10.head)
        XCTAssertTrue(String(decoding: v10.body, as: UTF8.self).hasPrefix("retry: "), "bare SSE, no chunk size line")
        let bare = try events(v10.body)
        assertSequence(bare)
        XCTAssertEqual(bare.map(\.data), chunked.map(\.data), "the same events on both framings")
    }

    func testHeadThenGetOnOneKeepAliveConnectionReadCorrectly() throws {
        let relay = try startRelay()
        let c = try RawConnection(port: relay.port)
        try c.send("HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        let raw = String(decoding: c.readToEnd(timeout: 10), as: UTF8.self)
        let parts = raw.components(separatedBy: "HTTP/1.1 200 OK\r\n")
        XCTAssertEqual(parts.count, 3, "two responses: \(raw)")
        // The HEAD response is headers only: it ends at its blank line, and the GET response
        // starts right after.
        XCTAssertTrue(parts[1].hasSuffix("\r\n\r\n"), "HEAD response carries no body: \(parts[1])")
        XCTAssertTrue(parts[1].contains("Content-Length: 15\r\n"), "HEAD gives the GET's Content-Length: \(parts[1])")
        XCTAssertTrue(parts[2].hasSuffix("{\"status\":\"ok\"}"), "GET response body: \(parts[2])")
        // Empty lines before a request line are ignored (RFC 9112 §2.2), also after a body.
        let leading = try exchange(relay, "\r\nGET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(leading.hasPrefix("HTTP/1.1 200 "), leading)
        let afterBody = try exchange(relay, "POST /api/budget HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}\r\n"
                                     + "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(afterBody.hasPrefix("HTTP/1.1 405 ") && afterBody.hasSuffix("{\"status\":\"ok\"}"), afterBody)
    }

    func testSlowlorisIsCutAtTheDeadlineWhile100StreamsContinue() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "2s", "RELAY_SIMULATED_TOKENS_PER_SECOND": "40"])
        let maxTokens = 120
        let slow = try RawConnection(port: relay.port)
        let started = Date()
        try slow.send("POST /api/chat/stream HTTP/1.1\r\nHo")
        var streams: [SSEConnection] = []
        for i in 0..<100 {
            streams.append(try Chat.start(port: relay.port, token: RelayProcess.token(sub: "edge-\(i)"), maxTokens: maxTokens))
        }
        // Trickle one byte every 200 ms: each byte is progress, but the request never ends.
        var answer: [UInt8] = []
        for b in Array("st: a\r\nContent-Length: 10\r\n\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 100) {
            if let got = slow.read(max: 4096, timeout: 0.2) { answer = got; break }
            try? slow.send(String(decoding: [b], as: UTF8.self))
        }
        if answer.isEmpty { answer = slow.read(max: 4096, timeout: 10) ?? [] }
        let elapsed = Date().timeIntervalSince(started)
        let text = String(decoding: answer, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 408 "), "slowloris gets 408: \(text)")
        XCTAssertEqual(jsonCode(text), "request_timeout")
        XCTAssertGreaterThanOrEqual(elapsed, 1.9, "not cut before the deadline")
        XCTAssertEqual(slow.readToEnd(timeout: 5), [], "then closed")
        var stillStreaming = 0
        for (i, s) in streams.enumerated() {
            XCTAssertEqual(s.status, 200, "stream \(i)")
            let events = try s.readAll(timeout: 30)
            if i == 0 { stillStreaming = events.count }
            assertSequence(events)
            XCTAssertEqual(events.count, maxTokens + 1, "stream \(i): every delta and done")
            XCTAssertTrue(events.last?.data.contains("\"done\"") ?? false, "stream \(i) ends with done")
        }
        XCTAssertGreaterThan(stillStreaming, 0)
        XCTAssertEqual(try metric(relay, "relay_request_timeouts_total"), 1)
    }

    func testPendingRequestCapRefusesTheNextPartialRequest() throws {
        let relay = try startRelay(["RELAY_WORKERS": "1", "RELAY_MAX_PENDING_REQUESTS": "3"])
        var partial: [RawConnection] = []
        for _ in 0..<3 {
            let c = try RawConnection(port: relay.port)
            try c.send("GET /healthz HTTP/1.1\r\n")
            partial.append(c)
        }
        try eventually(10, "three pending requests registered") {
            // A complete request in one packet is never pending: it is still served.
            try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status == 200
        }
        var refused = ""
        try eventually(10, "a fourth partial request refused") {
            let c = try RawConnection(port: relay.port)
            try c.send("GET /healthz HTTP/1.1\r\n")
            refused = String(decoding: c.readToEnd(timeout: 2), as: UTF8.self)
            return !refused.isEmpty
        }
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 503 "), refused)
        XCTAssertEqual(jsonCode(refused), "too_many_pending_requests")
        // The pending three still complete normally.
        for c in partial {
            try c.send("Host: a\r\nConnection: close\r\n\r\n")
            XCTAssertTrue(String(decoding: c.readToEnd(timeout: 10), as: UTF8.self).hasPrefix("HTTP/1.1 200 "))
        }
        XCTAssertEqual(try metric(relay, "relay_pending_request_refusals_total"), 1)
    }

    /// CPU ticks (user + system) of `pid` from /proc/<pid>/stat (proc(5) fields 14 and 15).
    private func cpuTicks(_ pid: Int32) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
        return Int(fields[11])! + Int(fields[12])!
    }

    func testFileDescriptorExhaustionPausesAcceptAndRecovers() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "60s"])
        let pid = relay.process.processIdentifier
        let prlimit = Process()
        prlimit.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        prlimit.arguments = ["--pid", "\(pid)", "--nofile=256:256"]
        try prlimit.run()
        prlimit.waitUntilExit()
        XCTAssertEqual(prlimit.terminationStatus, 0, "prlimit")
        // A live stream and a keep-alive connection opened before the exhaustion.
        let stream = try Chat.start(port: relay.port, token: RelayProcess.token(sub: "fd-stream"), maxTokens: 400)
        let keepAlive = try RawConnection(port: relay.port)
        try keepAlive.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertNotNil(keepAlive.read(max: 4096, timeout: 10))
        let logBefore = relay.log.utf8.count
        let cpuBefore = try cpuTicks(pid)
        let t0 = Date()
        // Clients that connect and send nothing: not a request yet, but nothing the relay may
        // shed either (ConnectionShedding only closes connections that started a request
        // head), so accept() keeps failing and the listener must back off.
        var tricklers: [RawConnection] = []
        for _ in 0..<300 {
            tricklers.append(try RawConnection(port: relay.port))
        }
        try eventually(20, "every descriptor in use") {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count >= 256
        }
        try consistently(for: 4, "the relay keeps running while accept() fails") { relay.process.isRunning }
        // The keep-alive connection and the stream are still served meanwhile.
        try keepAlive.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertTrue(String(decoding: keepAlive.read(max: 4096, timeout: 10) ?? [], as: UTF8.self).hasPrefix("HTTP/1.1 200"),
                      "health check on an open connection while accept() fails")
        let cpu = Double(try cpuTicks(pid) - cpuBefore) / Double(sysconf(Int32(_SC_CLK_TCK)))
        let wall = Date().timeIntervalSince(t0)
        let logGrowth = relay.log.utf8.count - logBefore
        print("fd exhaustion: relay CPU \(String(format: "%.2f", cpu)) s over \(String(format: "%.1f", wall)) s wall; log grew \(logGrowth) bytes")
        XCTAssertLessThan(cpu / wall, 0.5, "the relay does not spin while accept() fails")
        XCTAssertLessThan(logGrowth, 16_000, "log stays small (one line a second at most)")
        for c in tricklers { c.close() }
        tricklers.removeAll()
        let left = Date()
        try eventually(10, "/healthz answers again after the clients left") {
            (try? HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status) == 200
        }
        print("fd exhaustion: /healthz answered \(String(format: "%.2f", Date().timeIntervalSince(left))) s after the clients left")
        let events = try stream.readAll(timeout: 30)
        assertSequence(events)
        XCTAssertEqual(events.count, 401, "the stream opened before the exhaustion completes")
        let m = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics").text
        XCTAssertTrue(m.contains("# HELP relay_accept_errors_total "), "accept errors have HELP")
        let failures = try XCTUnwrap(try metric(relay, "relay_accept_errors_total"))
        print("fd exhaustion: \(Int(failures)) accept() failures counted")
        XCTAssertGreaterThan(failures, 0, "accept() did fail (300 clients over 256 descriptors)")
        XCTAssertEqual(try metric(relay, "relay_connections_shed_total"), 0, "silent connections are not shed")
        XCTAssertTrue(relay.log.contains("accept() failed; pausing the listener"), "logged")
        XCTAssertFalse(relay.log.contains("Error from accept() call"), "libevent's per-turn warning is gone")
    }
}
