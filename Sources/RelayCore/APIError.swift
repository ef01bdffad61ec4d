/// An error answered as plain HTTP before the first byte of a stream:
/// body `{"error":{"code":"…","message":"…"}}` (docs/PROTOCOL.md §8). Once a stream has begun,
/// the same code travels as an `error` event instead (`asEvent`).
public struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// HTTP status code (RFC 9110 §15).
    public var status: Int
    /// Machine-readable code, one of docs/PROTOCOL.md §8's (`invalid_request`, `stream_not_found`, …).
    public var code: ErrorCode
    /// Human-readable explanation; never contains user content or tokens.
    public var message: String

    public init(status: Int, code: ErrorCode, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The JSON body: `{"error":{"code":"…","message":"…"}}`.
    public var body: String {
        "{\"error\":{\"code\":\(JSONText.quoted(code.rawValue)),\"message\":\(JSONText.quoted(message))}}"
    }

    /// The same error as a stream `error` event.
    public var asEvent: StreamEvent { .error(status: status, code: code, message: message) }

    public var description: String { "\(status) \(code): \(message)" }

    /// An error with one of the relay's own codes; its status is the code's.
    public init(_ code: ErrorCode, _ message: String) {
        self.init(status: code.status, code: code, message: message)
    }

    /// The relay's own code, `nil` for codes from elsewhere (a client-side `http_503`).
    public var errorCode: ErrorCode? { code.isRelayCode ? code : nil }

    /// 400 `invalid_request`.
    public static func invalidRequest(_ m: String) -> APIError { .init(.invalidRequest, m) }
    /// 400 `invalid_json`.
    public static func invalidJSON(_ m: String) -> APIError { .init(.invalidJSON, m) }
    /// 400 `invalid_last_event_id`.
    public static func invalidLastEventID(_ m: String) -> APIError { .init(.invalidLastEventID, m) }
    /// 401 `unauthorized`.
    public static func unauthorized(_ m: String) -> APIError { .init(.unauthorized, m) }
    /// 404 `stream_not_found`: unknown, expired, or another user's stream (never 403).
    public static let streamNotFound = APIError(.streamNotFound, "no such stream (unknown, expired, or not yours)")
    /// 404 `not_found`: no such route.
    public static let routeNotFound = APIError(.routeNotFound, "no such route")
    /// 405 `method_not_allowed`.
    public static func methodNotAllowed(_ allowed: String) -> APIError { .init(.methodNotAllowed, "allowed: \(allowed)") }
    /// 409 `resume_gap`: `Last-Event-ID` is older than the retained window.
    public static func resumeGap(_ m: String) -> APIError { .init(.resumeGap, m) }
    /// 413 `body_too_large`.
    public static func bodyTooLarge(limit: Int) -> APIError { .init(.bodyTooLarge, "request body exceeds \(limit) bytes") }
    /// 503 `not_ready`.
    public static func notReady(_ m: String) -> APIError { .init(.notReady, m) }
    /// 500 `internal_error`.
    public static func internalError(_ m: String) -> APIError { .init(.internalError, m) }
    /// 500: a stored value of the stream does not open (docs/DATA_MODEL.md §15).
    public static func storedDataUnreadable(_ m: String) -> APIError { .init(.storedDataUnreadable, m) }
    /// 401 `session_revoked` (an `error` event: the session was revoked mid-stream).
    public static let sessionRevoked = APIError(.sessionRevoked, "the session was revoked")
    /// 401 `token_expired` (an `error` event: the token expired mid-stream).
    public static let tokenExpired = APIError(.tokenExpired, "the access token expired; reconnect with a fresh token")
}
