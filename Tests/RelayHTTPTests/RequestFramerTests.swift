import RelayCore
@testable import RelayHTTP
import XCTest

/// `RequestFramer`: heads, Content-Length and chunked bodies, keep-alive, limits, idleness.
final class RequestFramerTests: XCTestCase {
    private func events(_ text: String, limits: RequestHeadValidator.Limits = .init(), split: Int? = nil) -> [RequestFramer.Event] {
        var f = RequestFramer(limits: limits)
        let bytes = Array(text.utf8)
        guard let split else { return f.feed(bytes) }
        var out: [RequestFramer.Event] = []
        var i = 0
        while i < bytes.count {
            out += f.feed(Array(bytes[i..<min(bytes.count, i + split)]))
            i += split
        }
        return out
    }

    private func kinds(_ e: [RequestFramer.Event]) -> [String] {
        e.map {
            switch $0 {
            case .head(let h): return "head \(h.method) \(h.target)"
            case .endOfRequest: return "end"
            case .rejected(let r): return "rejected \(r.reason.rawValue) \(r.error.status)"
            }
        }
    }

    func testKeepAliveRequestsWithLengthAndChunkedBodies() {
        let text = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
            + "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1A\r\n" + String(repeating: "x", count: 26) + "\r\n0\r\nX-Checksum: 1\r\n\r\n"
            + "DELETE /d HTTP/1.1\r\nHost: h\r\n\r\n"
        let expected = ["head POST /a", "end", "head GET /b", "end", "head POST /c", "end", "head DELETE /d", "end"]
        for split in [nil, 1, 2, 5, 17] {
            XCTAssertEqual(kinds(events(text, split: split)), expected, "split \(String(describing: split))")
        }
    }

    func testIdleSpansTheWholeRequest() {
        var f = RequestFramer()
        XCTAssertTrue(f.isIdle)
        _ = f.feed(Array("POST /a HTTP/1.1\r\nHost: h\r\n".utf8))
        XCTAssertFalse(f.isIdle, "inside the head")
        _ = f.feed(Array("Content-Length: 3\r\n\r\nab".utf8))
        XCTAssertFalse(f.isIdle, "inside the body")
        XCTAssertEqual(f.feed(Array("c".utf8)), [.endOfRequest])
        XCTAssertTrue(f.isIdle)
        XCTAssertEqual(f.completedRequests, 1)
    }

    func testBadChunkedBodies() {
        let head = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        for (body, reason) in [("g\r\n", "invalidChunkedBody"), ("\r\n", "invalidChunkedBody"), ("5 x\r\n", "invalidChunkedBody"),
                               ("5\nhello\r\n", "invalidChunkedBody"), ("5\r\nhelloXY", "invalidChunkedBody"),
                               ("5;\u{1}\r\n", "invalidChunkedBody"), ("11111111111111111\r\n", "invalidChunkedBody"),
                               ("0\r\nHost: x\r\n\r\n", "invalidChunkedBody"), ("0\r\nContent-Length: 1\r\n\r\n", "invalidChunkedBody"),
                               ("0\r\nX-A : 1\r\n\r\n", "invalidChunkedBody"), ("0\r\nX-A: 1\n\r\n", "invalidChunkedBody"),
                               ("1" + String(repeating: " ", count: 2000) + "\r\n", "invalidChunkedBody")] {
            let e = events(head + body)
            XCTAssertEqual(kinds(e).last, "rejected \(reason) 400", body.debugDescription)
        }
    }

    func testBodyLimitBeforeTheBodyIsRead() {
        var limits = RequestHeadValidator.Limits()
        limits.maxBodyBytes = 10
        XCTAssertEqual(kinds(events("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", limits: limits)), ["rejected bodyTooLarge 413"])
        XCTAssertEqual(kinds(events("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", limits: limits)), ["head POST /a", "end"])
        let chunked = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n"
        XCTAssertEqual(kinds(events(chunked, limits: limits)), ["head POST /c", "rejected bodyTooLarge 413"])
        XCTAssertEqual(kinds(events("POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n")).last,
                       "rejected bodyTooLarge 413", "a 2^64-1 chunk overflows Int")
    }

    func testRejectionIsFinal() {
        var f = RequestFramer()
        let e = f.feed(Array("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        XCTAssertEqual(kinds(e), ["rejected repeatedHost 400"])
        XCTAssertEqual(f.feed(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)), [])
    }

    /// The bytes of the request in progress are the last ones fed, counted from its first
    /// byte, so a caller holds back exactly an incomplete head and passes what came before.
    func testPendingRequestBytesCountOnlyTheRequestInProgress() {
        var f = RequestFramer()
        let post = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"
        _ = f.feed(Array((post + "GET /he").utf8))
        XCTAssertFalse(f.isIdle)
        XCTAssertEqual(f.pendingRequestBytes, 7)
        _ = f.feed(Array("al".utf8))
        XCTAssertEqual(f.pendingRequestBytes, 9)
        _ = f.feed(Array("th HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        XCTAssertTrue(f.isIdle)
        XCTAssertEqual(f.pendingRequestBytes, 0)
        let chunked = "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
        _ = f.feed(Array((chunked + "\r\nGE").utf8))
        XCTAssertEqual(f.pendingRequestBytes, 4)
    }

    /// Empty lines after a request (RFC 9112 §2.2) start no request: the whole-request deadline
    /// waits for another byte; more CR/LF than the allowed empty lines start it.
    func testEmptyLinesAloneDoNotStartARequest() {
        var f = RequestFramer()
        _ = f.feed(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\n".utf8))
        XCTAssertFalse(f.isIdle)
        XCTAssertFalse(f.requestStarted)
        _ = f.feed(Array("\r\nG".utf8))
        XCTAssertTrue(f.requestStarted)
        var g = RequestFramer()
        let crs = g.feed(Array(String(repeating: "\r", count: 2 * RequestHeadValidator.Limits().maxLeadingEmptyLines + 2).utf8))
        XCTAssertTrue(g.requestStarted || kinds(crs).contains { $0.hasPrefix("rejected") },
                      "a run of bare CRs is not empty lines: the deadline runs or it is refused")
    }
}
