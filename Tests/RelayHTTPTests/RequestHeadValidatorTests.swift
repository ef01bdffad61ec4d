import RelayCore
@testable import RelayHTTP
import XCTest

/// `RequestHeadValidator`: each RFC 9112 / 9110 rule, incremental feeding, limits.
final class RequestHeadValidatorTests: XCTestCase {
    private func check(_ head: String, limits: RequestHeadValidator.Limits = .init()) -> RequestHeadValidator.Progress {
        var v = RequestHeadValidator(limits: limits)
        return v.feed(Array(head.utf8))
    }

    private func accepted(_ head: String, file: StaticString = #filePath, line: UInt = #line) -> RequestHead? {
        guard case .complete(let h, _) = check(head) else {
            XCTFail("refused: \(check(head)) for \(head.debugDescription)", file: file, line: line)
            return nil
        }
        return h
    }

    private func assertRejected(_ head: String, _ reason: RequestHeadRejection.Reason, status: Int = 400,
                                file: StaticString = #filePath, line: UInt = #line) {
        guard case .rejected(let r) = check(head) else {
            return XCTFail("not refused (\(check(head))): \(head.debugDescription)", file: file, line: line)
        }
        XCTAssertEqual(r.reason, reason, head.debugDescription, file: file, line: line)
        XCTAssertEqual(r.error.status, status, head.debugDescription, file: file, line: line)
        if status == 400 { XCTAssertEqual(r.error.code, "invalid_request", file: file, line: line) }
        XCTAssertTrue(r.error.body.hasPrefix("{\"error\":{\"code\":"), file: file, line: line)
    }

    func testAcceptsOrdinaryRequestsAndDecodesTheirFacts() throws {
        let post = try XCTUnwrap(accepted("POST /api/chat/stream HTTP/1.1\r\nHost: relay.example:8080\r\nContent-Type: application/json\r\nContent-Length: 42\r\nAuthorization: Bearer a.b.c\r\n\r\n"))
        XCTAssertEqual(post.method, "POST")
        XCTAssertEqual(post.target, "/api/chat/stream")
        XCTAssertEqual(post.minorVersion, 1)
        XCTAssertEqual(post.host, "relay.example:8080")
        XCTAssertEqual(post.framing, .length(42))
        XCTAssertEqual(post.contentLength, 42)
        XCTAssertFalse(post.isHead)

        let head = try XCTUnwrap(accepted("HEAD /healthz HTTP/1.1\r\nHost: [::1]:9\r\n\r\n"))
        XCTAssertTrue(head.isHead)
        XCTAssertEqual(head.contentLength, 0)
        XCTAssertEqual(head.framing, .none)

        let old = try XCTUnwrap(accepted("GET /healthz HTTP/1.0\r\n\r\n"))
        XCTAssertEqual(old.minorVersion, 0)
        XCTAssertNil(old.host)

        let chunked = try XCTUnwrap(accepted("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"))
        XCTAssertEqual(chunked.framing, .chunked)
        XCTAssertNil(chunked.contentLength)

        XCTAssertNotNil(accepted("GET http://relay.example/api/budget HTTP/1.1\r\nHost: relay.example\r\n\r\n"))
        XCTAssertNotNil(accepted("GET / HTTP/1.1\r\nHost:\r\nX-Empty:\r\nX-Tab:\tv\t\r\nX-Utf8: caf\u{e9}\r\n\r\n"))
        XCTAssertNotNil(accepted("DELETE /api/chat/stream/abcdefghijklmnop HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n"))
        XCTAssertEqual(accepted("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n")?.contentLength, 7)
    }

    func testLeadingEmptyLinesAreIgnoredUpToTheLimit() throws {
        let h = try XCTUnwrap(accepted("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"))
        XCTAssertEqual(h.leadingEmptyLineBytes, 4)
        assertRejected(String(repeating: "\r\n", count: 5) + "GET / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidRequestLine)
    }

    func testRequestLine() {
        assertRejected("GET /\r\nHost: a\r\n\r\n", .invalidRequestLine)
        assertRejected("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidRequestLine)
        assertRejected("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", .invalidRequestLine)
        assertRejected(" GET / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidRequestLine)
        assertRejected("GET / http/1.1\r\nHost: a\r\n\r\n", .invalidRequestLine)
        assertRejected("GET / HTTP/1.10\r\nHost: a\r\n\r\n", .invalidRequestLine)
        assertRejected("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod)
        assertRejected("GET /a\u{7F}b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget)
        assertRejected("GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget)
        assertRejected("GET relay/x HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget)
        assertRejected("GET * HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget)
        assertRejected("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\r\n\r\n", .invalidRequestLine)  // TLS ClientHello bytes
    }

    func testVersionsOtherThan10And11Get505() {
        for v in ["HTTP/2.0", "HTTP/0.9", "HTTP/1.2", "HTTP/3.0", "HTTP/9.9"] {
            assertRejected("GET / \(v)\r\nHost: a\r\n\r\n", .unsupportedVersion, status: 505)
        }
    }

    func testUnsupportedMethodsGet405WithAllow() throws {
        for m in ["TRACE", "PROPFIND", "PUT", "PATCH", "OPTIONS", "CONNECT", "get", "BREW"] {
            assertRejected("\(m) / HTTP/1.1\r\nHost: a\r\n\r\n", .methodNotAllowed, status: 405)
        }
        guard case .rejected(let r) = check("TRACE / HTTP/1.1\r\nHost: a\r\n\r\n") else { return XCTFail() }
        XCTAssertEqual(r.allow, "GET, HEAD, POST, DELETE")
        XCTAssertEqual(r.error.code, "method_not_allowed")
        var only = RequestHeadValidator.Limits()
        only.allowedMethods = ["GET"]
        guard case .rejected(let r2) = check("POST / HTTP/1.1\r\nHost: a\r\n\r\n", limits: only) else { return XCTFail() }
        XCTAssertEqual(r2.allow, "GET")
    }

    func testLineBreaksMustBeCRLF() {
        assertRejected("GET / HTTP/1.1\nHost: a\r\n\r\n", .bareLineBreak)
        assertRejected("GET / HTTP/1.1\r\nHost: a\n\r\n", .bareLineBreak)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\n\n", .bareLineBreak)
        assertRejected("GET / HTTP/1.1\r\nHost: a\rX-B: c\r\n\r\n", .bareLineBreak)
        assertRejected("GET / HTTP/1.1\r\nX-A: a\rb\r\nHost: a\r\n\r\n", .bareLineBreak)
    }

    func testFieldLines() {
        assertRejected("GET / HTTP/1.1\r\nHost : a\r\n\r\n", .whitespaceBeforeColon)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nContent-Length\t: 5\r\n\r\n", .whitespaceBeforeColon)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX-A: one\r\n two\r\n\r\n", .obsoleteLineFolding)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX-A: one\r\n\ttwo\r\n\r\n", .obsoleteLineFolding)
        assertRejected("GET / HTTP/1.1\r\n Host: a\r\n\r\n", .obsoleteLineFolding)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", .invalidFieldLine)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\n: empty\r\n\r\n", .invalidFieldLine)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX(A): b\r\n\r\n", .invalidFieldLine)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{0}b\r\n\r\n", .invalidFieldValue)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{1}b\r\n\r\n", .invalidFieldValue)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{7F}\r\n\r\n", .invalidFieldValue)
    }

    func testHost() {
        assertRejected("GET / HTTP/1.1\r\nX-A: b\r\n\r\n", .missingHost)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", .repeatedHost)
        assertRejected("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", .repeatedHost)
        assertRejected("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", .invalidHost)
        assertRejected("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", .invalidHost)
        assertRejected("GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", .invalidHost)
        assertRejected("GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", .invalidHost)
        assertRejected("GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", .invalidHost)
        assertRejected("GET / HTTP/1.1\r\nHost: [zz]\r\n\r\n", .invalidHost)
    }

    func testContentLengthRules() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", .repeatedContentLength)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", .repeatedContentLength)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", .repeatedContentLength)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,6\r\n\r\n", .repeatedContentLength)
        for bad in ["", "-1", "+5", "5 5", "0x10", "1e3", "99999999999999999999999"] {
            assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(bad)\r\n\r\n", .invalidContentLength)
        }
    }

    func testTransferEncodingRules() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", .contentLengthWithTransferEncoding)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", .invalidTransferEncoding)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", .invalidTransferEncoding)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", .invalidTransferEncoding)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", .invalidTransferEncoding)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", .invalidTransferEncoding)
        assertRejected("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .invalidTransferEncoding)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferCoding, status: 501)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferCoding, status: 501)
        XCTAssertNotNil(accepted("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked \r\n\r\n"))
    }

    func testLimits() {
        var small = RequestHeadValidator.Limits()
        small.maxHeadBytes = 64
        small.maxFieldLines = 3
        small.maxTargetBytes = 16
        guard case .rejected(let big) = check("GET / HTTP/1.1\r\nHost: a\r\nX-A: " + String(repeating: "b", count: 100) + "\r\n\r\n", limits: small),
              case .rejected(let many) = check("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: small),
              case .rejected(let long) = check("GET /" + String(repeating: "x", count: 20) + " HTTP/1.1\r\nHost: a\r\n\r\n", limits: small)
        else { return XCTFail("limits not enforced") }
        XCTAssertEqual([big.reason, many.reason, long.reason], [.headTooLarge, .headTooLarge, .targetTooLong])
        XCTAssertEqual([big.error.status, many.error.status, long.error.status], [431, 431, 414])
        // Exactly at the limit is fine.
        let exact = "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: 64 - 32) + "\r\n\r\n"
        XCTAssertEqual(exact.utf8.count, 64)
        guard case .complete = check(exact, limits: small) else { return XCTFail("\(check(exact, limits: small))") }
    }

    /// An endless head is refused once the limit is passed, whatever the chunking; memory stays bounded.
    func testEndlessHeadIsCutAtTheLimit() {
        var v = RequestHeadValidator()
        _ = v.feed(Array("GET / HTTP/1.1\r\nHost: a\r\nX-A: ".utf8))
        var fed = 0
        var result = RequestHeadValidator.Progress.needMore
        while case .needMore = result, fed < 1_000_000 {
            result = v.feed([UInt8](repeating: 0x61, count: 1000))
            fed += 1000
        }
        guard case .rejected(let r) = result else { return XCTFail("never refused") }
        XCTAssertEqual(r.reason, .headTooLarge)
        XCTAssertLessThanOrEqual(fed, 17_000)
    }

    func testIncrementalFeedingGivesTheSameAnswerAndBytesUsed() throws {
        let head = "POST /api/chat/stream HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"
        let bytes = Array((head + "hello" + "GET / HTTP/1.1\r\n").utf8)
        for split in [1, 2, 3, 7, 13, 64, bytes.count] {
            var v = RequestHeadValidator()
            var used = 0
            var outcome: RequestHead?
            var offset = 0
            while offset < bytes.count, outcome == nil {
                let piece = Array(bytes[offset..<min(bytes.count, offset + split)])
                switch v.feed(piece) {
                case .needMore: used += piece.count
                case .complete(let h, let n): used += n; outcome = h
                case .rejected(let r): return XCTFail("split \(split): \(r)")
                }
                offset += piece.count
            }
            let h = try XCTUnwrap(outcome, "split \(split)")
            XCTAssertEqual(used, head.utf8.count, "split \(split)")
            XCTAssertEqual(h.headBytes, head.utf8.count)
            XCTAssertEqual(h.contentLength, 5)
            // Sticky until reset, then ready for the next request.
            guard case .complete = v.feed([0x41]) else { return XCTFail("not sticky") }
            v.reset()
            guard case .needMore = v.feed(Array("GET / HTTP/1.1\r\n".utf8)) else { return XCTFail("reset") }
        }
    }

    /// A bad line is refused as soon as it is complete, before the rest of the head arrives.
    func testRejectsEarly() {
        var v = RequestHeadValidator()
        guard case .rejected(let r) = v.feed(Array("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n".utf8)) else {
            return XCTFail("waited for the end of the head")
        }
        XCTAssertEqual(r.reason, .repeatedContentLength)
        guard case .rejected = v.feed(Array("\r\n".utf8)) else { return XCTFail("not sticky") }
    }
}
