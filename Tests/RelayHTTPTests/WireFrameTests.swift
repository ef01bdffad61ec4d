import XCTest
import RelayCore
@testable import RelayHTTP

/// `WireFrame`: one SSE event framed once as an HTTP/1.1 chunk (RFC 9112 §7.1), its
/// data the exact `SSEFrame` text.
final class WireFrameTests: XCTestCase {
    private func text(_ b: ArraySlice<UInt8>) -> String { String(decoding: b, as: UTF8.self) }

    func testEventChunkIsSizeLineSSETextCRLF() {
        let json = StreamEvent.delta("héllo \"x\"").json
        let f = WireFrame.event(seq: 42, json: json)
        let sse = SSEFrame.event(seq: 42, json: json)
        XCTAssertEqual(text(f.bytes[f.body]), sse)
        XCTAssertEqual(text(f.bytes[...]), String(sse.utf8.count, radix: 16) + "\r\n" + sse + "\r\n")
    }

    func testDecodesWithTheChunkedDecoder() {
        for seq: UInt64 in [0, 1, 9, 10, 99, 100, 12_345, UInt64.max] {
            let json = StreamEvent.delta(String(repeating: "ب", count: Int(seq % 300))).json
            let f = WireFrame.event(seq: seq, json: json)
            var d = ChunkedBodyDecoder()
            var at = 0
            var body: [UInt8] = []
            loop: while true {
                let step = f.bytes.withUnsafeBytes { p in
                    d.next(UnsafeRawBufferPointer(rebasing: p[at...]), available: f.bytes.count - at)
                }
                switch step {
                case .skip(let n): at += n
                case .data(let n): body += f.bytes[at..<at + n]; at += n
                case .needMore: break loop
                case .end, .malformed: XCTFail("\(step)"); break loop
                }
            }
            XCTAssertEqual(at, f.bytes.count, "seq \(seq): the whole chunk is consumed")
            XCTAssertEqual(String(decoding: body, as: UTF8.self), SSEFrame.event(seq: seq, json: json))
        }
    }

    func testSizeLineIsLowercaseHexOfTheData() {
        for n in [1, 9, 15, 16, 17, 255, 256, 4_096, 70_000] {
            let f = WireFrame(text: String(repeating: "a", count: n))
            XCTAssertEqual(f.body.count, n)
            XCTAssertEqual(text(f.bytes[..<(f.body.lowerBound - 2)]), String(n, radix: 16))
            XCTAssertEqual(Array(f.bytes[(f.body.lowerBound - 2)..<f.body.lowerBound]), [13, 10])
            XCTAssertEqual(Array(f.bytes.suffix(2)), [13, 10])
        }
    }

    func testTextFrameKeepsUTF8() {
        let f = WireFrame(text: SSEFrame.ping + "مرحبا")
        XCTAssertEqual(text(f.bytes[f.body]), ": ping\nمرحبا")
    }

    func testJSONBytesAndStringGiveTheSameFrame() {
        let json = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 3, completionTokens: 4)).json
        let a = WireFrame.event(seq: 7, json: json)
        let b = Array(json.utf8).withUnsafeBytes { WireFrame.event(seq: 7, jsonUTF8: $0) }
        XCTAssertEqual(a, b)
    }

    /// `WireFrame.event` against a string-built chunk, for data lengths around each hex
    /// digit boundary and seqs at every power of ten; `==` and `bytes` consistent.
    func testWireFrameMatchesAStringBuiltChunkAtHexBoundaries() {
        var lengths: [Int] = []
        for b in [0xF, 0xFF, 0xFFF, 0xFFFF] { lengths += [b - 1, b, b + 1, b + 2] }
        var seqs: [UInt64] = [0, UInt64.max, UInt64.max - 1]
        var p: UInt64 = 1
        for _ in 0..<19 { seqs += [p - 1, p, p + 1]; p &*= 10 }
        for seq in seqs {
            let fixed = "data: \nid: \(seq)".utf8.count + 2
            // The 64 KiB lengths for one seq only (debug-build comparisons of 64 KiB arrays are slow).
            for L in lengths where L > fixed && (L < 0xFFF0 || seq == 0) {
                let json = String(repeating: "x", count: L - fixed)
                let f = WireFrame.event(seq: seq, json: json)
                let sse = "data: \(json)\nid: \(seq)\n\n"
                XCTAssertEqual(sse.utf8.count, L)
                let want = Array((String(L, radix: 16) + "\r\n" + sse + "\r\n").utf8)
                XCTAssertEqual(f.bytes, want, "seq \(seq) L \(L)")
                XCTAssertEqual(f.count, want.count)
                XCTAssertEqual(Array(f.bytes[f.body]), Array(sse.utf8))
                XCTAssertEqual(f, WireFrame(text: sse))
                XCTAssertNotEqual(f, WireFrame(text: sse.replacingOccurrences(of: "data", with: "datA")))
                f.withUnsafeBytes { XCTAssertEqual(Array($0), want) }
            }
        }
    }
}
