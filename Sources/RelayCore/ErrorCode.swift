/// Every error code the relay itself sends on the wire (docs/PROTOCOL.md §8), with its HTTP
/// status and when it is sent. The error table of docs/PROTOCOL.md §8 is rendered from this type
/// (`ErrorCode.markdownTable`, checked by `ErrorTableTests`).
public enum ErrorCode: String, CaseIterable, Sendable {
    case invalidRequest = "invalid_request"
    case invalidJSON = "invalid_json"
    case invalidLastEventID = "invalid_last_event_id"
    case modelNotAllowed = "model_not_allowed"
    case unauthorized
    case sessionRevoked = "session_revoked"
    case tokenExpired = "token_expired"
    case streamNotFound = "stream_not_found"
    case routeNotFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case resumeGap = "resume_gap"
    case bodyTooLarge = "body_too_large"
    case tokenBudgetExhausted = "token_budget_exhausted"
    case tooManyStreams = "too_many_streams"
    case internalError = "internal_error"
    case upstreamError = "upstream_error"
    case notReady = "not_ready"
    case upstreamLost = "upstream_lost"
    case redisUnavailable = "redis_unavailable"
    case streamLost = "stream_lost"
    case upstreamTimeout = "upstream_timeout"
    case requestTimeout = "request_timeout"
    case uriTooLong = "uri_too_long"
    case headerFieldsTooLarge = "request_header_fields_too_large"
    case notImplemented = "not_implemented"
    case httpVersionNotSupported = "http_version_not_supported"
    case tooManyPendingRequests = "too_many_pending_requests"

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
        case .invalidRequest, .invalidJSON, .invalidLastEventID, .modelNotAllowed: return 400
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
        case .internalError: return 500
        case .upstreamError: return 502
        case .notReady, .upstreamLost, .redisUnavailable, .streamLost, .tooManyPendingRequests: return 503
        case .upstreamTimeout: return 504
        }
    }

    /// When the code is sent.
    public var delivery: Delivery {
        switch self {
        case .sessionRevoked, .tokenExpired, .upstreamError, .upstreamTimeout, .upstreamLost,
             .redisUnavailable, .streamLost:
            return .inStream
        case .resumeGap:
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
        case .notReady: return "Redis unreachable, draining, or at `RELAY_MAX_CONNECTIONS` (that one with `Retry-After: 1`)"
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
        }
    }

    /// The error table of docs/PROTOCOL.md §8 (Markdown), one row per code in declaration order.
    public static var markdownTable: String {
        var out = "| status | code | sent | meaning |\n|---|---|---|---|\n"
        for c in allCases {
            out += "| \(c.status) | `\(c.rawValue)` | \(c.delivery.rawValue) | \(c.meaning) |\n"
        }
        return out
    }
}
