import RelayCore
/// Follows the requests of one HTTP/1.1 connection byte by byte: each head through
/// `RequestHeadValidator`, then its body by its framing (`Content-Length` bytes, or the chunked
/// coding of RFC 9112 §7.1), then the next head (keep-alive, pipelining). Pure: the caller
/// feeds the bytes it reads and forwards them to evhttp unless an event says otherwise.
///
/// For the relay's filtering bufferevent (docs/PROTOCOL.md §11): `feed` every inbound chunk; on
/// `.rejected` answer `rejection.error` (JSON, plus `Allow` on 405) and close without passing the
/// bytes on; `isIdle` is `false` from a request's first byte until its body's end, which is the
/// span the whole-request deadline (`RELAY_REQUEST_TIMEOUT`) covers.
///
/// Chunked bodies (RFC 9112 §7.1): `chunk-size [chunk-ext] CRLF chunk-data CRLF`, ending with a
/// zero size, optional trailer field lines (checked like header fields, RFC 9112 §7.1.2) and
/// CRLF. chunk-size is 1–16 hex digits; chunk-ext is not interpreted (§7.1.1 "MUST ignore
/// unrecognized chunk extensions") but may not hold control characters other than HTAB; the
/// size line is at most 1024 bytes and the trailer section at most `limits.maxHeadBytes`, its
/// lines checked by the header-field rules; `Host`, `Content-Length` and `Transfer-Encoding`
/// in trailers are refused (RFC 9110 §6.5.1: framing and routing fields are not allowed
/// there). The sum of the chunk sizes above `limits.maxBodyBytes` is refused with 413.
public struct RequestFramer: Sendable {
    /// What the bytes of one `feed` completed, in order.
    public enum Event: Sendable, Equatable {
        /// A request head was accepted; its body (if any) follows.
        case head(RequestHead)
        /// The body of the last head ended (immediately after `.head` when it has none).
        case endOfRequest
        /// The connection must be answered with this rejection and closed. Nothing follows.
        case rejected(RequestHeadRejection)
    }

    private enum State: Sendable {
        case head
        case lengthBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataCR, chunkDataLF
        case trailers
        case closed
    }

    /// The limits in use (head and body).
    public var limits: RequestHeadValidator.Limits { validator.limits }

    private var validator: RequestHeadValidator
    private var state = State.head
    private var line: [UInt8] = []
    private var bodyBytes = 0
    private var trailerBytes = 0
    private var trailerValidator = RequestHeadValidator()

    /// Longest chunk-size line (size and extensions), terminator excluded.
    public static let maxChunkLineBytes = 1024

    /// Creates a framer for one connection.
    public init(limits: RequestHeadValidator.Limits = .init()) {
        validator = RequestHeadValidator(limits: limits)
    }

    /// `true` between requests: no byte of a next request has arrived (the whole-request
    /// deadline is not running), and after a rejection.
    public private(set) var isIdle = true

    /// `true` once a byte of the request in progress other than the empty lines RFC 9112 §2.2
    /// asks to ignore before a request line has arrived: the span the whole-request deadline
    /// covers. A client that ends a body with an extra CRLF has started no request, and
    /// `RequestHeadValidator` refuses more than `maxLeadingEmptyLines` of them, so at most a
    /// few bytes ever wait without a deadline. `false` whenever `isIdle`.
    public private(set) var requestStarted = false
    private var leadingLineBytes = 0

    /// Bytes fed since the first byte of the request in progress (its leading empty lines
    /// included); 0 while `isIdle`. They are the last bytes fed: a caller that holds an
    /// incomplete head back from its parser holds exactly these, and passes the complete
    /// requests that came before them in the same read.
    public private(set) var pendingRequestBytes = 0

    /// Requests whose body ended so far.
    public private(set) var completedRequests = 0

    /// Scans the next inbound bytes and returns the events they complete, in order.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [Event] {
        var events: [Event] = []
        var i = 0
        let n = bytes.count
        // Where a request that began in this feed began (after the previous one's end).
        var begin = 0
        defer { pendingRequestBytes = isIdle ? 0 : pendingRequestBytes + (n - begin) }
        while i < n {
            switch state {
            case .closed:
                return events
            case .head:
                isIdle = false
                if !requestStarted {
                    // Only CR and LF so far, and no more of them than the empty lines allowed
                    // (a run of bare CRs is not an empty line: it starts the deadline too).
                    var j = i
                    while j < n, bytes[j] == 0x0D || bytes[j] == 0x0A { j += 1 }
                    leadingLineBytes += j - i
                    if j < n || leadingLineBytes > 2 * limits.maxLeadingEmptyLines + 1 { requestStarted = true }
                }
                let rest = UnsafeRawBufferPointer(rebasing: bytes[i...])
                switch validator.feed(rest) {
                case .needMore:
                    i = n
                case .rejected(let r):
                    return events + [reject(r)]
                case .complete(let head, let used):
                    i += used
                    events.append(.head(head))
                    validator.reset()
                    switch head.framing {
                    case .none, .length(0):
                        events.append(endOfRequest()); pendingRequestBytes = 0; begin = i
                    case .length(let k):
                        state = .lengthBody(remaining: k)
                    case .chunked:
                        bodyBytes = 0
                        state = .chunkSize
                    }
                }
            case .lengthBody(let remaining):
                let take = min(remaining, n - i)
                i += take
                if take == remaining {
                    events.append(endOfRequest()); pendingRequestBytes = 0; begin = i
                } else {
                    state = .lengthBody(remaining: remaining - take)
                }
            case .chunkData(let remaining):
                let take = min(remaining, n - i)
                i += take
                state = take == remaining ? .chunkDataCR : .chunkData(remaining: remaining - take)
            case .chunkDataCR:
                guard bytes[i] == 0x0D else { return events + [reject(.invalidChunkedBody, "chunk data not followed by CRLF")] }
                i += 1
                state = .chunkDataLF
            case .chunkDataLF:
                guard bytes[i] == 0x0A else { return events + [reject(.invalidChunkedBody, "chunk data not followed by CRLF")] }
                i += 1
                state = .chunkSize
            case .chunkSize:
                let b = bytes[i]
                i += 1
                if let r = chunkSizeByte(b) { return events + [r] }
            case .trailers:
                let b = bytes[i]
                i += 1
                trailerBytes += 1
                if trailerBytes > limits.maxHeadBytes {
                    return events + [reject(.headTooLarge, "trailer section longer than \(limits.maxHeadBytes) bytes")]
                }
                switch trailerValidator.feed([b]) {
                case .needMore: break
                case .rejected(let r):
                    return events + [reject(.invalidChunkedBody, "bad trailer section: \(r.error.message)")]
                case .complete(let trailers, _):
                    guard trailers.framing == .none else {
                        return events + [reject(.invalidChunkedBody, "framing field in the trailer section")]
                    }
                    events.append(endOfRequest()); pendingRequestBytes = 0; begin = i
                }
            }
        }
        return events
    }

    /// Scans the next inbound bytes given as an array; see `feed(_: UnsafeRawBufferPointer)`.
    public mutating func feed(_ bytes: [UInt8]) -> [Event] {
        bytes.withUnsafeBytes { feed($0) }
    }

    private mutating func endOfRequest() -> Event {
        state = .head
        isIdle = true
        requestStarted = false
        leadingLineBytes = 0
        completedRequests += 1
        return .endOfRequest
    }

    private mutating func reject(_ r: RequestHeadRejection) -> Event {
        state = .closed
        isIdle = true
        requestStarted = false
        return .rejected(r)
    }

    private mutating func reject(_ reason: RequestHeadRejection.Reason, _ message: String) -> Event {
        reject(RequestHeadRejection(reason, message))
    }

    /// One byte of a chunk-size line; a non-nil result is a rejection.
    private mutating func chunkSizeByte(_ b: UInt8) -> Event? {
        if b != 0x0A {
            if line.last == 0x0D { return reject(.invalidChunkedBody, "CR not followed by LF in a chunk-size line") }
            line.append(b)
            if line.count > Self.maxChunkLineBytes + 1 {
                return reject(.invalidChunkedBody, "chunk-size line longer than \(Self.maxChunkLineBytes) bytes")
            }
            return nil
        }
        guard line.last == 0x0D else { return reject(.invalidChunkedBody, "chunk-size line ends in LF without CR") }
        line.removeLast()
        defer { line.removeAll(keepingCapacity: true) }
        var size = 0
        var k = 0
        while k < line.count, let d = Self.hexValue(line[k]) {
            guard k < 16 else { return reject(.invalidChunkedBody, "chunk-size longer than 16 hex digits") }
            let (m, o) = size.multipliedReportingOverflow(by: 16)
            guard !o else { return reject(.bodyTooLarge, "chunk-size overflows") }
            size = m + d
            k += 1
        }
        guard k > 0 else { return reject(.invalidChunkedBody, "chunk-size is not hexadecimal") }
        var e = k
        while e < line.count, line[e] == 0x20 || line[e] == 0x09 { e += 1 }  // BWS (§7.1.1)
        guard e == line.count || line[e] == 0x3B else { return reject(.invalidChunkedBody, "junk after chunk-size") }
        for c in line[e...] where c != 0x09 && (c < 0x20 || c == 0x7F) {
            return reject(.invalidChunkedBody, "control character in a chunk extension")
        }
        let (total, o) = bodyBytes.addingReportingOverflow(size)
        if o || (limits.maxBodyBytes.map { total > $0 } ?? false) {
            return reject(.bodyTooLarge, "request body exceeds \(limits.maxBodyBytes ?? Int.max) bytes")
        }
        bodyBytes = total
        if size == 0 {
            trailerBytes = 0
            trailerValidator = RequestHeadValidator(limits: trailerLimits)
            // The trailer section is field lines ending in an empty line: fed to a validator
            // primed with a dummy request line so the same field rules apply.
            _ = trailerValidator.feed(Array("POST / HTTP/1.1\r\nHost: trailer\r\n".utf8))
            state = .trailers
        } else {
            state = .chunkData(remaining: size)
        }
        return nil
    }

    private var trailerLimits: RequestHeadValidator.Limits {
        var l = limits
        l.maxHeadBytes = Int.max / 2
        l.maxBodyBytes = nil
        l.allowedMethods = ["POST"]
        return l
    }

    private static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }
}
