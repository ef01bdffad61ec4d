/// An error code on the wire: the `code` of an error body or `error` event
/// (docs/PROTOCOL.md §8). The relay's own codes are the static members below, each with
/// its HTTP status and when it is sent; the error table of docs/PROTOCOL.md §8 is rendered
/// from them (`ErrorCode.markdownTable`, checked by `ErrorTableTests`). A client may also
/// hold codes it makes itself (`http_503`, `unreachable`) or that a newer relay sends, so
/// the set is open: a code is its wire text.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible, CaseIterable {
    /// The wire text (`snake_case`).
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }

    public static let invalidRequest: ErrorCode = "invalid_request"
    public static let invalidJSON: ErrorCode = "invalid_json"
    public static let invalidLastEventID: ErrorCode = "invalid_last_event_id"
    public static let invalidOffset: ErrorCode = "invalid_offset"
    public static let modelNotAllowed: ErrorCode = "model_not_allowed"
    public static let unauthorized: ErrorCode = "unauthorized"
    public static let sessionRevoked: ErrorCode = "session_revoked"
    public static let tokenExpired: ErrorCode = "token_expired"
    public static let streamNotFound: ErrorCode = "stream_not_found"
    public static let routeNotFound: ErrorCode = "not_found"
    public static let methodNotAllowed: ErrorCode = "method_not_allowed"
    public static let resumeGap: ErrorCode = "resume_gap"
    public static let bodyTooLarge: ErrorCode = "body_too_large"
    public static let tokenBudgetExhausted: ErrorCode = "token_budget_exhausted"
    public static let tooManyStreams: ErrorCode = "too_many_streams"
    public static let internalError: ErrorCode = "internal_error"
    public static let upstreamError: ErrorCode = "upstream_error"
    public static let notReady: ErrorCode = "not_ready"
    public static let upstreamLost: ErrorCode = "upstream_lost"
    public static let redisUnavailable: ErrorCode = "redis_unavailable"
    public static let streamLost: ErrorCode = "stream_lost"
    public static let upstreamTimeout: ErrorCode = "upstream_timeout"
    public static let requestTimeout: ErrorCode = "request_timeout"
    public static let uriTooLong: ErrorCode = "uri_too_long"
    public static let headerFieldsTooLarge: ErrorCode = "request_header_fields_too_large"
    public static let notImplemented: ErrorCode = "not_implemented"
    public static let httpVersionNotSupported: ErrorCode = "http_version_not_supported"
    public static let tooManyPendingRequests: ErrorCode = "too_many_pending_requests"
    public static let storedDataUnreadable: ErrorCode = "stored_data_unreadable"

    /// The relay's own codes, in the order of the error table.
    public static let allCases: [ErrorCode] = [
        .invalidRequest,
        .invalidJSON,
        .invalidLastEventID,
        .invalidOffset,
        .modelNotAllowed,
        .unauthorized,
        .sessionRevoked,
        .tokenExpired,
        .streamNotFound,
        .routeNotFound,
        .methodNotAllowed,
        .resumeGap,
        .bodyTooLarge,
        .tokenBudgetExhausted,
        .tooManyStreams,
        .internalError,
        .upstreamError,
        .notReady,
        .upstreamLost,
        .redisUnavailable,
        .streamLost,
        .upstreamTimeout,
        .requestTimeout,
        .uriTooLong,
        .headerFieldsTooLarge,
        .notImplemented,
        .httpVersionNotSupported,
        .tooManyPendingRequests,
        .storedDataUnreadable
    ]

    /// Whether the relay itself sends this code (one of `allCases`).
    public var isRelayCode: Bool { ErrorCode.allCases.contains(self) }

    /// When a code is sent.
    public enum Delivery: String, Sendable {
        /// Plain HTTP before the stream: `{"error":{"code","message"}}`.
        case beforeStream = "before the stream (HTTP JSON body)"
        /// An `error` event that ends a stream that has begun.
        case inStream = "in the stream (`error` event)"
        /// Either, depending on when the condition is found.
        case both = "before the stream, or in it as an `error` event"
    }

    /// The HTTP status (RFC 9110 §15), also carried in an `error` event's `status`.
    public var status: Int {
        switch self {
        case .invalidRequest, .invalidJSON, .invalidLastEventID, .invalidOffset, .modelNotAllowed: return 400
        case .unauthorized, .sessionRevoked, .tokenExpired: return 401
        case .streamNotFound, .routeNotFound: return 404
        case .methodNotAllowed: return 405
        case .requestTimeout: return 408
        case .uriTooLong: return 414
        case .headerFieldsTooLarge: return 431
        case .notImplemented: return 501
        case .httpVersionNotSupported: return 505
        case .resumeGap: return 409
        case .bodyTooLarge: return 413
        case .tokenBudgetExhausted, .tooManyStreams: return 429
        case .internalError, .storedDataUnreadable: return 500
        case .upstreamError: return 502
        case .notReady, .upstreamLost, .redisUnavailable, .streamLost, .tooManyPendingRequests: return 503
        case .upstreamTimeout: return 504
        default: return 500
        }
    }

    /// When the code is sent.
    public var delivery: Delivery {
        switch self {
        case .sessionRevoked, .tokenExpired, .upstreamError, .upstreamTimeout, .upstreamLost,
             .redisUnavailable, .streamLost:
            return .inStream
        case .resumeGap, .storedDataUnreadable:
            return .both
        default:
            return .beforeStream
        }
    }

    /// One line: what the code means and what the client does.
    public var meaning: String {
        switch self {
        case .invalidRequest: return "the request is malformed (HTTP/1.1 framing per RFC 9112, body fields, request id, headers, Content-Type); a framing error also closes the connection"
        case .invalidJSON: return "the body is not a JSON object"
        case .invalidLastEventID: return "`Last-Event-ID` is not a seq, or is beyond the stream's last event"
        case .invalidOffset: return "an offset read's `offset` is not `-1`, `now` or 1–20 digits, is beyond the stream's last event, or its `live` mode is unknown (§12)"
        case .modelNotAllowed: return "the request names a model its tier may not use (`RELAY_MODELS`)"
        case .unauthorized: return "missing, malformed, expired, badly signed or revoked token; wrong admin key"
        case .sessionRevoked: return "the session was revoked while the stream was live"
        case .tokenExpired: return "the token expired mid-stream; resume with a fresh token"
        case .streamNotFound: return "unknown, expired, or another user's stream (never 403)"
        case .routeNotFound: return "no such route"
        case .methodNotAllowed: return "the path exists with other methods (`Allow` lists them)"
        case .resumeGap: return "events after `Last-Event-ID` are no longer retained (lossless resume off or text expired)"
        case .bodyTooLarge: return "the body exceeds `RELAY_MAX_BODY_BYTES`"
        case .tokenBudgetExhausted: return "less than `RELAY_BUDGET_MIN_TOKENS` of the tier's monthly budget is left after reservations"
        case .tooManyStreams: return "the session already generates `RELAY_MAX_STREAMS_PER_SESSION` answers"
        case .internalError: return "request id collision, or the upstream call cannot be set up; retry"
        case .upstreamError: return "the upstream failed (connect, non-2xx, malformed or oversized stream)"
        case .notReady: return "Redis unreachable, draining, or at `RELAY_MAX_CONNECTIONS`; with `Retry-After` (1–3 s, §4.3)"
        case .upstreamLost: return "the instance generating the answer stopped; retry the request"
        case .redisUnavailable: return "Redis was unreachable longer than `RELAY_REDIS_OUTAGE_GRACE`; resume later"
        case .streamLost: return "Redis no longer has the stream (restart without persistence, expiry); re-send the request"
        case .upstreamTimeout: return "the upstream sent nothing for the idle timeout, or connecting timed out"
        case .requestTimeout: return "the whole request (head and body) did not arrive within `RELAY_REQUEST_TIMEOUT` of its first byte; the connection is closed"
        case .uriTooLong: return "the request-target exceeds 8 KiB (RFC 9110 §15.5.15); the connection is closed"
        case .headerFieldsTooLarge: return "the request head exceeds 160 KiB or 200 field lines (RFC 6585 §5); the connection is closed"
        case .notImplemented: return "a transfer coding other than `chunked` (RFC 9112 §6.1); the connection is closed"
        case .httpVersionNotSupported: return "an HTTP version other than 1.0 and 1.1; the connection is closed"
        case .tooManyPendingRequests: return "this worker already has `RELAY_MAX_PENDING_REQUESTS` connections part-way through sending a request; retry"
        case .storedDataUnreadable: return "a stored event or text of the stream does not open with this relay's `RELAY_ENCRYPTION_KEYS` (a kid it does not hold, another key, altered bytes: docs/DATA_MODEL.md §15); nothing of it is sent"
        default: return "not a code of the relay's"
        }
    }

    /// The error table of docs/PROTOCOL.md §8 (Markdown), one row per code in `allCases` order.
    public static var markdownTable: String {
        var out = "| status | code | sent | meaning |\n|---|---|---|---|\n"
        for c in allCases {
            out += "| \(c.status) | `\(c.rawValue)` | \(c.delivery.rawValue) | \(c.meaning) |\n"
        }
        return out
    }
}
