import XCTest
import RelayCore
@testable import RelayHTTP

/// `ChunkedBodyDecoder` (RFC 9112 §7.1) fed a body split at every byte boundary.
final class ChunkedBodyDecoderTests: XCTestCase {
    /// Decodes `wire` fed in pieces of `piece` bytes; returns the body and whether it ended.
    private func decode(_ wire: [UInt8], piece: Int) -> (body: [UInt8], ended: Bool, error: String?) {
        var d = ChunkedBodyDecoder()
        var unread: [UInt8] = []
        var fed = 0
        var body: [UInt8] = []
        while true {
            let step = unread.withUnsafeBytes { d.next($0, available: unread.count) }
            switch step {
            case .needMore:
                guard fed < wire.count else { return (body, false, nil) }
                let n = min(piece, wire.count - fed)
                unread += wire[fed..<fed + n]
                fed += n
            case .skip(let n): unread.removeFirst(n)
            case .data(let n):
                body += unread[..<n]
                unread.removeFirst(n)
            case .end(let n):
                unread.removeFirst(n)
                XCTAssertTrue(d.isDone)
                return (body, true, nil)
            case .malformed(let why): return (body, false, why)
            }
        }
    }

    func testEveryPieceSizeDecodesTheSameBody() {
        let wire = Array("5;ext=1\r\nhello\r\n1A \r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n".utf8)
        for piece in 1...wire.count {
            let r = decode(wire, piece: piece)
            XCTAssertNil(r.error, "piece \(piece)")
            XCTAssertTrue(r.ended, "piece \(piece)")
            XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "helloabcdefghijklmnopqrstuvwxyz", "piece \(piece)")
        }
    }

    func testLFOnlyLinesAndAnUnendedBody() {
        XCTAssertEqual(decode(Array("3\nabc\r\n0\n\n".utf8), piece: 2).ended, true)
        let r = decode(Array("3\r\nab".utf8), piece: 1)
        XCTAssertFalse(r.ended)
        XCTAssertEqual(r.body, Array("ab".utf8))
    }

    func testBrokenFramingIsMalformed() {
        XCTAssertNotNil(decode(Array("zz\r\n".utf8), piece: 4).error)
        XCTAssertNotNil(decode(Array("\r\n".utf8), piece: 4).error)
        XCTAssertNotNil(decode(Array("3\r\nabcXY".utf8), piece: 8).error)
        XCTAssertNotNil(decode(Array(repeating: UInt8(ascii: "1"), count: 2000), piece: 2000).error)
        XCTAssertNotNil(decode(Array("1000000000000000\r\n".utf8), piece: 64).error, "more than 15 hex digits")
    }

    func testTheWindowIsNeededOnlyForFraming() {
        var d = ChunkedBodyDecoder()
        XCTAssertTrue(d.needsWindow)
        let line = Array("4\r\n".utf8)
        XCTAssertEqual(line.withUnsafeBytes { d.next($0, available: 3) }, .skip(3))
        XCTAssertFalse(d.needsWindow)
        XCTAssertEqual(d.next(UnsafeRawBufferPointer(start: nil, count: 0), available: 10), .data(4))
        XCTAssertTrue(d.needsWindow)
    }
}
