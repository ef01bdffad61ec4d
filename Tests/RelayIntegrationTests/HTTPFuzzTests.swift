import Foundation
import XCTest
import RelayCore
import RelayTestKit
import RelayTestSupport

/// An HTTP-level fuzzer against a running relay (loopback only, bounded in
/// count and time). Mutates a seed set of valid requests, sends each on its own connection,
/// and asserts: the relay never crashes, never answers a client's mistake with a 5xx other than
/// the two RFC 9110 prescribes for one (501 for an unknown transfer coding, 505 for an
/// unsupported HTTP version), never answers with libevent's HTML page (except the one case the
/// README's Known limits names: a chunk extension), and keeps serving (`/healthz` between
/// batches).
///
/// Bounds: `RELAY_HTTP_FUZZ_SECONDS` (default 12) and `RELAY_HTTP_FUZZ_REQUESTS` (default
/// 20,000), whichever comes first; `RELAY_HTTP_FUZZ_SEED` picks the sequence (default fixed, so
/// a failure reproduces). `make fuzz` runs it for 120 s.
final class HTTPFuzzTests: RelayTestCase {
    private struct Outcome {
        var status: Int?
        var raw: [UInt8]
    }

    /// Sends `bytes` on a fresh connection, half-closes, reads until EOF or `timeout` s.
    private func send(_ bytes: [UInt8], port: Int, timeout: Double = 2) throws -> Outcome {
        let fd = try LoopbackSocket.connect(port: port)
        defer { close(fd) }
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }  // the relay refused and closed early: fine
            off += n
        }
        shutdown(fd, Int32(SHUT_WR))
        var out: [UInt8] = []
        let until = Date().addingTimeInterval(timeout)
        var buf = [UInt8](repeating: 0, count: 65536)
        while Date() < until {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(1, until.timeIntervalSinceNow * 1000))
            if poll(&pfd, 1, left) <= 0 { break }
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        var status: Int?
        if out.count >= 12, out.starts(with: Array("HTTP/1.".utf8)) {
            status = Int(String(decoding: out[9..<12], as: UTF8.self))
        }
        return Outcome(status: status, raw: out)
    }

    private static func seeds(token: String, id: String) -> [[UInt8]] {
        let body = String(decoding: Chat.body(maxTokens: 3), as: UTF8.self)
        let auth = "Authorization: Bearer \(token)\r\n"
        let texts = [
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            "HEAD /readyz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            "GET /metrics HTTP/1.0\r\n\r\n",
            "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\n\(auth)Content-Type: application/json\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)",
            "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\n\(auth)Content-Type: application/json\r\nX-Request-Id: \(id)\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\(String(body.utf8.count, radix: 16))\r\n\(body)\r\n0\r\n\r\n",
            "GET /api/chat/stream/\(id) HTTP/1.1\r\nHost: a\r\n\(auth)Last-Event-ID: 1\r\nConnection: close\r\n\r\n",
            "GET /api/chat/stream/\(id)?lastEventId=2 HTTP/1.1\r\nHost: a\r\n\(auth)Connection: close\r\n\r\n",
            "DELETE /api/chat/stream/\(id) HTTP/1.1\r\nHost: a\r\n\(auth)Connection: close\r\n\r\n",
            "GET /api/budget HTTP/1.1\r\nHost: a\r\n\(auth)Connection: close\r\n\r\n",
            "POST /admin/sessions/s-1/revoke HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer wrong\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        ]
        return texts.map { Array($0.utf8) }
    }

    private static let interesting: [UInt8] = Array("\r\n\0 \t:;,/?#%\u{7F}0123456789-aZ\"{}".utf8) + [0xFF, 0xC3, 0x80]
    private static let tokens: [String] = ["\r\n", "\r\n\r\n", "Content-Length: 5\r\n", "Content-Length: -1\r\n",
                                           "Transfer-Encoding: chunked\r\n", "Host: b\r\n", " HTTP/1.1", "HTTP/2.0",
                                           "Content-Length: 99999999999999999999\r\n", "Expect: 100-continue\r\n",
                                           "Connection: keep-alive\r\n", "\n", "\r", "TRACE", "OPTIONS", "ffffffffffffffffff\r\n"]

    /// One to four random edits of `input`.
    private static func mutate(_ input: [UInt8], _ other: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var b = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let pos = b.isEmpty ? 0 : Int.random(in: 0..<b.count, using: &rng)
            switch Int.random(in: 0..<9, using: &rng) {
            case 0: if !b.isEmpty { b[pos] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng)) }
            case 1: b.insert(interesting.randomElement(using: &rng)!, at: pos)
            case 2: if !b.isEmpty { b.removeSubrange(pos..<min(b.count, pos + Int.random(in: 1...16, using: &rng))) }
            case 3: b.insert(contentsOf: Array(tokens.randomElement(using: &rng)!.utf8), at: pos)
            case 4: b = Array(b.prefix(pos))  // truncated
            case 5:  // splice with another seed
                let cut = other.isEmpty ? 0 : Int.random(in: 0..<other.count, using: &rng)
                b = Array(b.prefix(pos)) + other[cut...]
            case 6: if !b.isEmpty { b[pos] = interesting.randomElement(using: &rng)! }
            case 7:  // repeat a slice (doubled header lines, long values)
                let end = min(b.count, pos + Int.random(in: 1...64, using: &rng))
                let slice = Array(b[pos..<end])
                for _ in 0..<Int.random(in: 1...40, using: &rng) { b.insert(contentsOf: slice, at: pos) }
            default:  // case flip of a letter
                if !b.isEmpty, (0x41...0x5A).contains(b[pos]) || (0x61...0x7A).contains(b[pos]) { b[pos] ^= 0x20 }
            }
        }
        return b
    }

    func testMutatedRequestsNeverCrashOr5xxAndTheRelayKeepsServing() throws {
        let env = ProcessInfo.processInfo.environment
        let seconds = Double(env["RELAY_HTTP_FUZZ_SECONDS"] ?? "") ?? 12
        let maxRequests = Int(env["RELAY_HTTP_FUZZ_REQUESTS"] ?? "") ?? 20_000
        let seed = UInt64(env["RELAY_HTTP_FUZZ_SEED"] ?? "") ?? 0x5EED_1313
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "1s"])
        let token = RelayProcess.token(sub: "fuzz")
        let id = Chat.newID()
        _ = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 3).readAll()
        let seeds = Self.seeds(token: token, id: id)
        for s in seeds {
            let r = try send(s, port: relay.port)
            XCTAssertNotNil(r.status, "seed answered: \(String(decoding: s, as: UTF8.self))")
        }
        var rng = SplitMix64(seed: seed)
        var statuses: [Int: Int] = [:]
        var noAnswer = 0
        var sent = 0
        let started = Date()
        var failures = 0
        while sent < maxRequests, Date().timeIntervalSince(started) < seconds, failures < 5 {
            for _ in 0..<100 where sent < maxRequests {
                let input = Self.mutate(seeds.randomElement(using: &rng)!, seeds.randomElement(using: &rng)!, &rng)
                let r = try send(input, port: relay.port)
                sent += 1
                guard let status = r.status else { noAnswer += 1; continue }
                statuses[status, default: 0] += 1
                let text = String(decoding: r.raw, as: UTF8.self)
                let request = String(decoding: input, as: UTF8.self).debugDescription
                if status >= 500 && status != 501 && status != 505 {
                    failures += 1
                    XCTFail("5xx for a client's mistake: \(text.prefix(300))\nrequest: \(request.prefix(600))")
                }
                if text.contains("<HTML>") && !(status == 413 && request.lowercased().contains("chunked")) {
                    failures += 1
                    XCTFail("libevent's HTML answer: \(text.prefix(200))\nrequest: \(request.prefix(600))")
                }
            }
            XCTAssertTrue(relay.process.isRunning, "the relay is still running after \(sent) requests")
            guard relay.process.isRunning else { break }
            let health = try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz")
            XCTAssertEqual(health.status, 200, "/healthz after \(sent) requests")
        }
        let elapsed = Date().timeIntervalSince(started)
        let summary = statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
        print("http fuzz: \(sent) requests in \(String(format: "%.1f", elapsed)) s (\(Int(Double(sent) / elapsed))/s), seed \(seed); statuses \(summary); closed without an answer \(noAnswer)")
        XCTAssertGreaterThan(sent, 200, "the fuzzer ran")
        XCTAssertTrue(relay.process.isRunning)
    }
}
