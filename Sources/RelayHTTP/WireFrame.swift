import Foundation
import RelayCore

/// An event framed once for the wire and shared by every connection that sends it: the
/// relay's one SSE event framer (docs/PROTOCOL.md §4).
///
/// The frame holds one HTTP/1.1 chunk of the `chunked` transfer coding (RFC 9112 §7.1:
/// `chunk-size` in hex, CRLF, the data, CRLF) whose data is the SSE text (WHATWG HTML
/// §9.2, e.g. `data: {…}\nid: 7\n\n`); `body` is the range of the bare SSE text, for
/// a connection that does not use chunked coding (an HTTP/1.0 client, whose response
/// ends by closing the connection). The storage is one reference-counted object:
/// handing a frame to a thousand subscribers copies no bytes. Never empty: an empty
/// chunk would be the last-chunk marker `0\r\n\r\n` that ends the response.
public struct WireFrame: @unchecked Sendable, Equatable {   // `storage` is never written after `init`
    /// The chunk's bytes, in one tail-allocated object: an `Array` allocation
    /// made outside the standard library is not specialized and looks up the array
    /// storage's generic metadata at run time, ≈ 330 instructions per frame, once per
    /// delivered event. Written once in `init`, read only afterwards.
    final class Storage: ManagedBuffer<Int, UInt8> {}

    private let storage: Storage
    /// The chunk's size, bytes: size line, data, CRLF (the storage's header).
    public var count: Int { storage.header }
    /// Where the data (the SSE text) lies in the chunk.
    public let body: Range<Int>

    /// The whole chunk (size line, data, CRLF) as an array: a copy, for tests and tools;
    /// the write path reads the bytes in place (`withUnsafeBytes`).
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The SSE text alone (the chunk's data), as a string: for tests, tools and the
    /// rare write that is not shared (a catch-up delta, a relay-raised error).
    public var text: String { withUnsafeBytes { String(decoding: $0[body], as: UTF8.self) } }

    /// Runs `body` with the whole chunk's bytes (valid during the call).
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeMutablePointerToElements { try body(UnsafeRawBufferPointer(start: $0, count: count)) }
    }

    public static func == (a: WireFrame, b: WireFrame) -> Bool {
        guard a.count == b.count, a.body == b.body else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 } }
    }

    /// Frames `text` (non-empty, UTF-8) as one chunk.
    /// - Precondition: `text` is not empty.
    public init(text: String) {
        var t = text
        self = t.withUTF8 { p in WireFrame(length: p.count) { out in out.copyMemory(from: UnsafeRawBufferPointer(p)) } }
    }

    /// The SSE event `data: <json>\nid: <seq>\n\n` (the id last, `SSEFrame`) framed as one
    /// chunk, written straight into the frame's storage (no intermediate string).
    /// `json` must not contain CR or LF (the relay's event JSON never does).
    public static func event(seq: UInt64, json: String) -> WireFrame {
        var json = json
        return json.withUTF8 { j in event(seq: seq, jsonUTF8: UnsafeRawBufferPointer(j)) }
    }

    /// `event(seq:json:)` for JSON given as UTF-8 bytes (a live pub/sub payload's tail).
    public static func event(seq: UInt64, jsonUTF8 j: UnsafeRawBufferPointer) -> WireFrame {
        let digits = ASCIIDecimal.digits(seq)
        let length = dataPrefix.utf8CodeUnitCount + j.count + idPrefix.utf8CodeUnitCount + digits + 2
        return WireFrame(length: length) { out in
            let p = out.baseAddress!
            var at = 0
            @inline(__always) func put(_ s: StaticString) {
                (p + at).copyMemory(from: s.utf8Start, byteCount: s.utf8CodeUnitCount)
                at += s.utf8CodeUnitCount
            }
            put(dataPrefix)
            if let src = j.baseAddress, j.count > 0 { (p + at).copyMemory(from: src, byteCount: j.count) }
            at += j.count
            put(idPrefix)
            ASCIIDecimal.write(seq, digits: digits, to: p + at)
            at += digits
            p.storeBytes(of: 0x0A, toByteOffset: at, as: UInt8.self)
            p.storeBytes(of: 0x0A, toByteOffset: at + 1, as: UInt8.self)
        }
    }

    /// Appends one event's SSE text, `data: <json>\nid: <seq>\n\n`, to `text`: the same
    /// bytes as `event(seq:json:)`'s data, for a batch framed as one chunk
    /// (`WireFrame(text:)`). `json` must not contain CR or LF.
    public static func appendText(seq: UInt64, json: String, to text: inout String) {
        text.reserveCapacity(text.utf8.count + json.utf8.count + 32)
        text.append("data: ")
        text.append(json)
        text.append("\nid: ")
        text.append(String(seq))
        text.append("\n\n")
    }

    /// Builds a chunk of `length` (> 0) data bytes that `fill` writes.
    private init(length: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(length > 0, "an empty chunk would end the response")
        let hex = WireFrame.hexDigits(length)
        let total = hex + 2 + length + 2
        storage = unsafeDowncast(Storage.create(minimumCapacity: total) { _ in total }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { p in
            var v = length
            var i = hex
            while i > 0 {
                i -= 1
                let d = UInt8(truncatingIfNeeded: v & 0xF)
                p[i] = d < 10 ? 0x30 &+ d : 0x57 &+ d   // lowercase hex, RFC 9112 §7.1 allows either case
                v >>= 4
            }
            p[hex] = 0x0D
            p[hex + 1] = 0x0A
            fill(UnsafeMutableRawBufferPointer(start: p + hex + 2, count: length))
            p[total - 2] = 0x0D
            p[total - 1] = 0x0A
        }
        body = (hex + 2)..<(hex + 2 + length)
    }

    private static let dataPrefix: StaticString = "data: "
    private static let idPrefix: StaticString = "\nid: "

    static func hexDigits(_ v: Int) -> Int {
        var n = 1
        var x = v
        while x >= 16 { x >>= 4; n += 1 }
        return n
    }
}
