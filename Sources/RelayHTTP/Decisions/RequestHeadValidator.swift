import RelayCore
/// A strict, incremental HTTP/1.1 request-head validator (RFC 9112; docs/PROTOCOL.md §11):
/// the relay checks each request head with it, in a filtering bufferevent, before evhttp
/// parses it.
///
/// Feed the connection's bytes as they arrive; `feed` answers `.needMore`, `.complete` (the
/// head is acceptable; its decoded facts and how many of this call's bytes belonged to it) or
/// `.rejected` (the relay's JSON error to send, then close). A rejection is reported as soon
/// as the offending line is complete (or a limit is passed), without waiting for the rest.
/// After `.complete` / `.rejected` further feeds return the same result until `reset()`, which
/// readies the validator for the next request on a keep-alive connection (after its body).
///
/// Rules (RFC 9112 "HTTP/1.1", RFC 9110 "HTTP Semantics"), all violations → 400
/// `invalid_request` unless noted:
/// * Lines end in CRLF; a bare LF or a CR not followed by LF is refused (§2.2 allows a
///   recipient to accept bare LF, and says a bare CR MUST be treated as invalid or replaced;
///   we refuse both). Up to `limits.maxLeadingEmptyLines` empty lines before the request line
///   are ignored (§2.2 "SHOULD ignore at least one empty line"); they are reported in
///   `RequestHead.leadingEmptyLineBytes`.
/// * Request line (§3): `method SP request-target SP HTTP-version`, single spaces. Method a
///   token (RFC 9110 §9.1 / §5.6.2). Target visible ASCII only, origin-form (`/…`) or
///   absolute-form (`http://…`, `https://…`) (§3.2); longer than `limits.maxTargetBytes` →
///   414. Version `HTTP/x.y` (§2.3): other than 1.0 and 1.1 → 505 (RFC 9110 §15.6.6; we also
///   refuse `HTTP/1.2`+ rather than treat it as 1.1, so evhttp never sees a version we did
///   not vet). A method outside `limits.allowedMethods` → 405 with `Allow` (RFC 9110
///   §15.5.6, §10.2.1); this includes `TRACE`, `CONNECT`, `OPTIONS`, WebDAV methods, and
///   unknown tokens (the relay answers 405 for these too, where RFC 9110 §15.6.2 would
///   permit 501: one answer for every method it does not serve, docs/PROTOCOL.md §11).
/// * Field lines (§5): `field-name ":" OWS field-value OWS`, name a token; whitespace before the
///   colon is refused (§5.1 MUST); a line starting with SP/HTAB (obs-fold, or whitespace
///   before the first field) is refused (§5.2, §2.2); a value byte that is NUL, CR, LF, any
///   other control character but HTAB, or DEL is refused (RFC 9110 §5.5).
/// * `Host` (§3.2): exactly one on HTTP/1.1, at most one on HTTP/1.0, value `uri-host [":"
///   port]` (RFC 3986 §3.2.2) or empty.
/// * Framing (§6): `Content-Length` must be 1*DIGIT (RFC 9110 §8.6) and appear once. A repeat
///   is refused even when the values agree (`42` and `42`, or `42, 42`): RFC 9110 §8.6 lets a
///   recipient either reject such a list or fold it, and RFC 9112 §6.3 item 5 makes any
///   invalid length an unrecoverable 400; rejecting both keeps one reading of the body length
///   for every hop (request smuggling, RFC 9112 §11.2). `Content-Length` together with
///   `Transfer-Encoding` is refused (§6.1 "MAY reject"; §6.3 item 3 calls it a smuggling
///   attempt). `Transfer-Encoding` must end in `chunked` (§6.3 item 4 MUST 400), apply it once
///   (§7.1), and is refused on HTTP/1.0 (§6.1 "faulty framing"); another coding before it
///   (`gzip, chunked`) → 501 (§6.1 SHOULD).
/// * Size: more than `limits.maxHeadBytes` bytes or `limits.maxFieldLines` field lines → 431
///   (RFC 6585 §5); a `Content-Length` above `limits.maxBodyBytes` → 413 `body_too_large`
///   (RFC 9110 §15.5.14), answered before the body is read.
///
/// Pure Swift (no C, no Foundation); memory is bounded by `limits.maxHeadBytes`.
public struct RequestHeadValidator: Sendable {
    /// Bounds and the relay's method list.
    public struct Limits: Sendable, Equatable {
        /// Longest head in bytes, leading empty lines and the final CRLF CRLF included (431 above).
        public var maxHeadBytes = 16 * 1024
        /// Longest request-target in bytes (414 above).
        public var maxTargetBytes = 8 * 1024
        /// Most field lines (431 above).
        public var maxFieldLines = 100
        /// Most empty lines ignored before the request line (400 above).
        public var maxLeadingEmptyLines = 4
        /// Largest accepted body in bytes (`RELAY_MAX_BODY_BYTES`); a larger `Content-Length`
        /// is refused with 413 at the end of the head. `nil`: no limit here.
        public var maxBodyBytes: Int?
        /// Methods the relay serves, in the order listed in `Allow`.
        public var allowedMethods: [String] = ["GET", "HEAD", "POST", "DELETE"]

        /// The defaults above.
        public init() {}
    }

    /// Result of `feed`.
    public enum Progress: Sendable, Equatable {
        /// The head is not complete yet and nothing is wrong so far.
        case needMore
        /// The head is complete and acceptable. `bytesUsed` of the bytes passed to this call
        /// belong to the head; any after them are the body or the next request.
        case complete(RequestHead, bytesUsed: Int)
        /// The head is refused: send `rejection.error` (with `Allow` for 405) and close.
        case rejected(RequestHeadRejection)
    }

    /// The limits in use.
    public let limits: Limits

    private enum Phase: Sendable { case requestLine, fields, finished }
    private var phase = Phase.requestLine
    private var result = Progress.needMore
    private var line: [UInt8] = []
    private var total = 0
    private var leadingEmptyBytes = 0
    private var fieldLines = 0
    private var method = ""
    private var target = ""
    private var minor = 1
    private var host: String?
    private var contentLength: Int?
    private var codings: [String]?

    /// Creates a validator for one request head.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Forgets the last head; the next byte fed is the first of a new request.
    public mutating func reset() {
        self = RequestHeadValidator(limits: limits)
    }

    /// Checks the next bytes of the connection (see the type's rules).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Progress {
        guard case .needMore = result else { return result }
        var used = 0
        for b in bytes {
            used += 1
            if let r = step(b) {
                if case .complete(let head, _) = r {
                    result = .complete(head, bytesUsed: used)
                } else {
                    result = r
                }
                return result
            }
        }
        return .needMore
    }

    /// Checks the next bytes given as an array; see `feed(_: UnsafeRawBufferPointer)`.
    public mutating func feed(_ bytes: [UInt8]) -> Progress {
        bytes.withUnsafeBytes { feed($0) }
    }

    // MARK: bytes and lines

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A
    private static let sp: UInt8 = 0x20
    private static let htab: UInt8 = 0x09

    /// One byte; a non-nil result ends the head.
    private mutating func step(_ b: UInt8) -> Progress? {
        total += 1
        if total > limits.maxHeadBytes {
            return reject(.headTooLarge, "request head longer than \(limits.maxHeadBytes) bytes")
        }
        if b == Self.lf {
            guard line.last == Self.cr else { return reject(.bareLineBreak, "line ends in LF without CR") }
            line.removeLast()
            let r = endOfLine()
            line.removeAll(keepingCapacity: true)
            return r
        }
        if line.last == Self.cr { return reject(.bareLineBreak, "CR not followed by LF") }
        line.append(b)
        if phase == .requestLine, line.count > limits.maxTargetBytes + 32 {
            return line.contains(Self.sp)
                ? reject(.targetTooLong, "request-target longer than \(limits.maxTargetBytes) bytes")
                : reject(.invalidRequestLine, "request line without spaces")
        }
        return nil
    }

    private mutating func endOfLine() -> Progress? {
        switch phase {
        case .requestLine:
            if line.isEmpty {
                leadingEmptyBytes += 2
                if leadingEmptyBytes / 2 > limits.maxLeadingEmptyLines {
                    return reject(.invalidRequestLine, "more than \(limits.maxLeadingEmptyLines) empty lines before the request line")
                }
                return nil
            }
            if let r = requestLine() { return r }
            phase = .fields
            return nil
        case .fields:
            if line.isEmpty { return endOfHead() }
            return fieldLine()
        case .finished:
            return result
        }
    }

    private func reject(_ reason: RequestHeadRejection.Reason, _ message: String, allow: String? = nil) -> Progress {
        .rejected(RequestHeadRejection(reason, message, allow: allow))
    }

    // MARK: request line (RFC 9112 §3)

    private mutating func requestLine() -> Progress? {
        let parts = line.split(separator: Self.sp, omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            return reject(.invalidRequestLine, "request line is not \"method SP target SP version\"")
        }
        let (m, t, v) = (parts[0], parts[1], parts[2])
        guard m.allSatisfy(Self.isTokenChar) else { return reject(.invalidMethod, "method is not a token") }
        guard t.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            return reject(.invalidTarget, "request-target has a byte outside visible ASCII")
        }
        if t.count > limits.maxTargetBytes {
            return reject(.targetTooLong, "request-target longer than \(limits.maxTargetBytes) bytes")
        }
        // HTTP-version = "HTTP" "/" DIGIT "." DIGIT (RFC 9112 §2.3), case-sensitive.
        let vb = Array(v)
        guard vb.count == 8, vb[0..<5].elementsEqual("HTTP/".utf8), Self.isDigit(vb[5]), vb[6] == 0x2E, Self.isDigit(vb[7]) else {
            return reject(.invalidRequestLine, "HTTP-version is not HTTP/x.y")
        }
        guard vb[5] == 0x31, vb[7] == 0x30 || vb[7] == 0x31 else {
            return reject(.unsupportedVersion, "only HTTP/1.0 and HTTP/1.1 are served")
        }
        minor = Int(vb[7] - 0x30)
        method = String(decoding: m, as: UTF8.self)
        guard limits.allowedMethods.contains(method) else {
            let allow = limits.allowedMethods.joined(separator: ", ")
            return reject(.methodNotAllowed, "method \(method.prefix(32)) is not allowed; allowed: \(allow)", allow: allow)
        }
        target = String(decoding: t, as: UTF8.self)
        let origin = t.first == 0x2F
        let lower = target.prefix(8).lowercased()
        guard origin || lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            return reject(.invalidTarget, "request-target is neither origin-form nor absolute-form")
        }
        return nil
    }

    // MARK: field lines (RFC 9112 §5)

    private mutating func fieldLine() -> Progress? {
        fieldLines += 1
        if fieldLines > limits.maxFieldLines {
            return reject(.headTooLarge, "more than \(limits.maxFieldLines) header fields")
        }
        if line[0] == Self.sp || line[0] == Self.htab {
            return reject(.obsoleteLineFolding, "line folding or whitespace at the start of a field line")
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return reject(.invalidFieldLine, "field line without ':'") }
        guard colon > 0 else { return reject(.invalidFieldLine, "empty field name") }
        let nameBytes = line[0..<colon]
        if nameBytes.last == Self.sp || nameBytes.last == Self.htab {
            return reject(.whitespaceBeforeColon, "whitespace between a field name and its colon")
        }
        guard nameBytes.allSatisfy(Self.isTokenChar) else { return reject(.invalidFieldLine, "field name is not a token") }
        var lo = colon + 1
        var hi = line.count
        while lo < hi, line[lo] == Self.sp || line[lo] == Self.htab { lo += 1 }
        while hi > lo, line[hi - 1] == Self.sp || line[hi - 1] == Self.htab { hi -= 1 }
        let value = line[lo..<hi]
        for b in value where !(b == Self.htab || b == Self.sp || (b >= 0x21 && b <= 0x7E) || b >= 0x80) {
            let what = b == 0 ? "NUL" : (b == Self.cr ? "CR" : (b == Self.lf ? "LF" : "control character"))
            return reject(.invalidFieldValue, "\(what) in a field value")
        }
        let name = String(decoding: nameBytes, as: UTF8.self).lowercased()
        switch name {
        case "host":
            guard host == nil else { return reject(.repeatedHost, "more than one Host field") }
            guard Self.isValidHost(value) else { return reject(.invalidHost, "Host is not host[:port]") }
            host = String(decoding: value, as: UTF8.self)
        case "content-length":
            guard contentLength == nil else { return reject(.repeatedContentLength, "more than one Content-Length") }
            guard let n = Self.decimal(value) else {
                return reject(value.contains(0x2C) ? .repeatedContentLength : .invalidContentLength,
                              "Content-Length is not one decimal length")
            }
            contentLength = n
        case "transfer-encoding":
            var list = codings ?? []
            for element in value.split(separator: 0x2C) {
                let coding = element.prefix(while: { $0 != 0x3B })  // parameters after ';'
                var a = coding.startIndex
                var z = coding.endIndex
                while a < z, coding[a] == Self.sp || coding[a] == Self.htab { a += 1 }
                while z > a, coding[z - 1] == Self.sp || coding[z - 1] == Self.htab { z -= 1 }
                if a < z { list.append(String(decoding: coding[a..<z], as: UTF8.self).lowercased()) }
            }
            codings = list
        default:
            break
        }
        return nil
    }

    // MARK: end of head

    private mutating func endOfHead() -> Progress {
        var framing = RequestHead.BodyFraming.none
        if let codings {
            if contentLength != nil {
                return reject(.contentLengthWithTransferEncoding, "both Content-Length and Transfer-Encoding")
            }
            if minor == 0 { return reject(.invalidTransferEncoding, "Transfer-Encoding in an HTTP/1.0 request") }
            guard codings.last == "chunked" else {
                return reject(.invalidTransferEncoding, "Transfer-Encoding does not end in chunked")
            }
            if codings.dropLast().contains("chunked") {
                return reject(.invalidTransferEncoding, "chunked applied more than once")
            }
            if codings.count > 1 { return reject(.unsupportedTransferCoding, "only the chunked transfer coding is supported") }
            framing = .chunked
        } else if let n = contentLength {
            if let max = limits.maxBodyBytes, n > max {
                return reject(.bodyTooLarge, "request body exceeds \(max) bytes")
            }
            framing = .length(n)
        }
        if minor == 1, host == nil { return reject(.missingHost, "HTTP/1.1 request without Host") }
        phase = .finished
        let head = RequestHead(method: method, target: target, minorVersion: minor, host: host, framing: framing,
                               headBytes: total, leadingEmptyLineBytes: leadingEmptyBytes)
        return .complete(head, bytesUsed: 0)  // `feed` fills in bytesUsed
    }

    // MARK: character classes

    /// tchar (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, DIGIT, ALPHA.
    private static func isTokenChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// 1*DIGIT that fits in `Int` (RFC 9110 §8.6), else `nil`.
    private static func decimal(_ value: ArraySlice<UInt8>) -> Int? {
        guard !value.isEmpty else { return nil }
        var n = 0
        for b in value {
            guard isDigit(b) else { return nil }
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(b - 0x30))
            if o1 || o2 { return nil }
            n = s
        }
        return n
    }

    /// `uri-host [":" port]` (RFC 3986 §3.2.2–3.2.3) or empty (RFC 9112 §3.2).
    private static func isValidHost(_ v: ArraySlice<UInt8>) -> Bool {
        if v.isEmpty { return true }
        var hostPart = v
        var port: ArraySlice<UInt8> = []
        if v.first == 0x5B {  // IP-literal "[" … "]"
            guard let close = v.firstIndex(of: 0x5D) else { return false }
            let inside = v[(v.startIndex + 1)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ isHex($0) || $0 == 0x3A || $0 == 0x2E }) else { return false }
            let rest = v[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == 0x3A else { return false }
                port = rest.dropFirst()
            }
            return port.allSatisfy(isDigit)
        }
        if let c = v.firstIndex(of: 0x3A) {
            hostPart = v[..<c]
            port = v[(c + 1)...]
        }
        return !hostPart.isEmpty && hostPart.allSatisfy(isRegNameChar) && port.allSatisfy(isDigit)
    }

    private static func isHex(_ b: UInt8) -> Bool {
        isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66)
    }

    /// unreserved / pct-encoded ('%') / sub-delims (RFC 3986 §3.2.2 reg-name, IPv4 included).
    private static func isRegNameChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E, 0x25: return true
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true
        default: return false
        }
    }
}
