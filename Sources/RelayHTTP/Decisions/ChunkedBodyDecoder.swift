import RelayCore
/// Incremental decoder of the `chunked` transfer coding of an HTTP/1.1 response body
/// (RFC 9112 §7.1): `chunk-size [; ext] CRLF data CRLF … 0 CRLF trailers CRLF`. Pure:
/// the caller owns the bytes and asks, for the start of its unread input, what to do
/// with them. Used by the test clients and the load generator.
public struct ChunkedBodyDecoder: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case size, data(Int), dataEnd, trailers, done
    }

    /// What to do with the start of the unread input.
    public enum Step: Sendable, Equatable {
        /// Not enough bytes to decide: read more.
        case needMore
        /// Drop this many bytes of framing (size line, CRLF, trailer).
        case skip(Int)
        /// The next this-many bytes are body data: hand them on, then drop them.
        case data(Int)
        /// Drop this many bytes; the body has ended (last chunk and trailers read).
        case end(Int)
        /// The framing is broken (bad or overlong size line, missing CRLF).
        case malformed(String)
    }

    /// Longest size or trailer line accepted, bytes.
    public static let maxLineBytes = 1024
    private var state = State.size

    public init() {}

    /// `true` once the last chunk and its trailers were read.
    public var isDone: Bool { state == .done }

    /// `true` when the next step reads a line or a CRLF from the window; `false` while
    /// chunk data is expected (only `available` counts then), so a caller reading from
    /// scattered buffers needs to make a contiguous window only when this is `true`.
    public var needsWindow: Bool {
        switch state {
        case .size, .dataEnd, .trailers: return true
        case .data, .done: return false
        }
    }

    /// Decides the next step.
    /// - Parameters:
    ///   - window: the start of the unread input (needs at least one whole line, up to
    ///     `maxLineBytes + 2` bytes, while a size or trailer line is expected).
    ///   - available: how many unread bytes there are in all (≥ `window.count`).
    public mutating func next(_ window: UnsafeRawBufferPointer, available: Int) -> Step {
        switch state {
        case .done:
            return .end(0)
        case .data(let remaining):
            guard available > 0 else { return .needMore }
            let n = min(remaining, available)
            state = n == remaining ? .dataEnd : .data(remaining - n)
            return .data(n)
        case .dataEnd:
            guard window.count >= 2 else { return .needMore }
            guard window[0] == 0x0D, window[1] == 0x0A else { return .malformed("chunk data not followed by CRLF") }
            state = .size
            return .skip(2)
        case .size, .trailers:
            guard let lf = window.firstIndex(of: 0x0A) else {
                return window.count > Self.maxLineBytes ? .malformed("line longer than \(Self.maxLineBytes) bytes") : .needMore
            }
            var end = lf
            if end > 0 && window[end - 1] == 0x0D { end -= 1 }
            if state == .trailers {
                guard end == 0 else { return .skip(lf + 1) }   // a trailer field: ignored
                state = .done
                return .end(lf + 1)
            }
            var size = 0
            var digits = 0
            for b in window[..<end] {
                if b == 0x3B || b == 0x20 || b == 0x09 { break }   // ";" chunk-ext, or BWS before it
                guard let d = Self.hex(b), digits < 15 else { return .malformed("bad chunk size line") }
                size = size * 16 + d
                digits += 1
            }
            guard digits > 0 else { return .malformed("bad chunk size line") }
            state = size == 0 ? .trailers : .data(size)
            return .skip(lf + 1)
        }
    }

    private static func hex(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }
}
