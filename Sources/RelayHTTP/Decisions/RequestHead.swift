import RelayCore
/// The facts of one accepted HTTP/1.1 request head (request line and header section, RFC 9112
/// §2.1), as `RequestHeadValidator` decoded them.
public struct RequestHead: Sendable, Equatable {
    /// How the message body is delimited (RFC 9112 §6.3).
    public enum BodyFraming: Sendable, Equatable {
        /// No body: neither `Content-Length` nor `Transfer-Encoding` (§6.3 item 7 for requests).
        case none
        /// Exactly this many bytes follow the head (`Content-Length`, RFC 9110 §8.6).
        case length(Int)
        /// `Transfer-Encoding: chunked` (RFC 9112 §7.1).
        case chunked
    }

    /// The method token, case-sensitive as sent (RFC 9110 §9.1): `GET`, `POST`, …
    public var method: String
    /// The request-target as sent (RFC 9112 §3.2): origin-form `/path?query`, or absolute-form.
    public var target: String
    /// The minor version: `0` for HTTP/1.0, `1` for HTTP/1.1.
    public var minorVersion: Int
    /// The `Host` field value (RFC 9112 §3.2), `nil` when absent (HTTP/1.0 only).
    public var host: String?
    /// How the body is delimited.
    public var framing: BodyFraming
    /// Bytes of the head, including any empty lines ignored before the request line and the
    /// final CRLF CRLF; the body (if any) starts right after.
    public var headBytes: Int
    /// Empty lines (CRLF) received before the request line and ignored (RFC 9112 §2.2); the
    /// first `leadingEmptyLineBytes` bytes are not part of the request proper.
    public var leadingEmptyLineBytes: Int

    /// `true` for `HEAD`: the response carries headers only (RFC 9110 §9.3.2).
    public var isHead: Bool { method == "HEAD" }

    /// The declared body length in bytes, `nil` when chunked; `0` without a body.
    public var contentLength: Int? {
        switch framing {
        case .none: return 0
        case .length(let n): return n
        case .chunked: return nil
        }
    }
}

/// Why `RequestHeadValidator` refused a request head, and the answer to send: the relay's JSON
/// error (`error.body`) with `error.status`, plus `Allow` for 405; then close the connection
/// (RFC 9112 §6.3 requires closing after a framing error, and nothing after a bad head can be
/// trusted to be the next request).
public struct RequestHeadRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, for tests and logs.
    public enum Reason: String, Sendable, Equatable {
        /// Request line not `method SP request-target SP HTTP-version` (RFC 9112 §3).
        case invalidRequestLine
        /// Method is not a token (RFC 9110 §9.1).
        case invalidMethod
        /// Request-target with a byte outside visible ASCII, or not origin-/absolute-form (§3.2).
        case invalidTarget
        /// Request-target longer than the limit: 414 (RFC 9110 §15.5.15).
        case targetTooLong
        /// Well-formed version other than HTTP/1.0 and HTTP/1.1: 505 (RFC 9110 §15.6.6).
        case unsupportedVersion
        /// Method the relay does not serve: 405 with `Allow` (RFC 9110 §15.5.6).
        case methodNotAllowed
        /// A line ends in LF without CR, or a CR is not followed by LF (RFC 9112 §2.2).
        case bareLineBreak
        /// Field line not `field-name ":" OWS field-value OWS`, field-name not a token (§5).
        case invalidFieldLine
        /// Whitespace between a field name and its colon (RFC 9112 §5.1: MUST 400).
        case whitespaceBeforeColon
        /// A line starting with SP or HTAB: obsolete line folding, or whitespace before the
        /// first field (RFC 9112 §5.2, §2.2).
        case obsoleteLineFolding
        /// NUL, CR, LF or another control character in a field value (RFC 9110 §5.5).
        case invalidFieldValue
        /// No `Host` on HTTP/1.1 (RFC 9112 §3.2: MUST 400).
        case missingHost
        /// More than one `Host` line (RFC 9112 §3.2).
        case repeatedHost
        /// `Host` value that is not `uri-host [":" port]` (RFC 9112 §3.2, RFC 3986 §3.2.2).
        case invalidHost
        /// `Content-Length` that is not 1*DIGIT, or too large to be a length (RFC 9110 §8.6,
        /// RFC 9112 §6.3 item 5).
        case invalidContentLength
        /// `Content-Length` given more than once, whether or not the values agree (RFC 9110
        /// §8.6 lets a recipient reject identical repeats; this validator does, see the type).
        case repeatedContentLength
        /// Both `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.1: MAY reject; we do).
        case contentLengthWithTransferEncoding
        /// `Transfer-Encoding` whose final coding is not `chunked` (RFC 9112 §6.3 item 4: MUST
        /// 400), or `Transfer-Encoding` in an HTTP/1.0 request (§6.1: faulty framing).
        case invalidTransferEncoding
        /// A transfer coding other than `chunked` before it (`gzip, chunked`): 501 (RFC 9112
        /// §6.1: "SHOULD respond with 501").
        case unsupportedTransferCoding
        /// Head longer than the limit, or too many field lines: 431 (RFC 6585 §5).
        case headTooLarge
        /// `Content-Length` (or the chunks' total) above `Limits.maxBodyBytes`: 413
        /// `body_too_large` (RFC 9110 §15.5.14), before any of the body is read.
        case bodyTooLarge
        /// Chunked body that breaks RFC 9112 §7.1 (chunk-size not hex, missing CRLF after the
        /// data, bad trailer line): 400, then close.
        case invalidChunkedBody
    }

    /// What was wrong.
    public var reason: Reason
    /// The answer: status and `{"error":{"code","message"}}` body.
    public var error: APIError
    /// The `Allow` field value for a 405 (RFC 9110 §10.2.1), else `nil`.
    public var allow: String?

    public var description: String { "\(reason.rawValue): \(error)" }

    init(_ reason: Reason, _ message: String, allow: String? = nil) {
        self.reason = reason
        self.allow = allow
        let code: ErrorCode
        switch reason {
        case .methodNotAllowed: code = .methodNotAllowed
        case .bodyTooLarge: code = .bodyTooLarge
        case .targetTooLong: code = .uriTooLong
        case .headTooLarge: code = .headerFieldsTooLarge
        case .unsupportedTransferCoding: code = .notImplemented
        case .unsupportedVersion: code = .httpVersionNotSupported
        default: code = .invalidRequest
        }
        error = APIError(code, message)
    }
}
