/// Every error code the relay itself sends on the wire (DESIGN §2), with its HTTP
/// status and when it is sent. The README's error table is rendered from this type
/// (`ErrorCode.markdownTable`, checked by `ErrorTableTests`).
public enum ErrorCode: String, CaseIterable, Sendable {
    case invalidRequest = "invalid_request"
    case invalidJSON = "invalid_json"
    case invalidLastEventID = "invalid_last_event_id"
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
        case .invalidRequest, .invalidJSON, .invalidLastEventID: return 400
        case .unauthorized, .sessionRevoked, .tokenExpired: return 401
        case .streamNotFound, .routeNotFound: return 404
        case .methodNotAllowed: return 405
        case .resumeGap: return 409
        case .bodyTooLarge: return 413
        case .tokenBudgetExhausted, .tooManyStreams: return 429
        case .internalError: return 500
        case .upstreamError: return 502
        case .notReady, .upstreamLost, .redisUnavailable, .streamLost: return 503
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
        case .invalidRequest: return "the request is malformed (body fields, request id, headers, Content-Type)"
        case .invalidJSON: return "the body is not a JSON object"
        case .invalidLastEventID: return "`Last-Event-ID` is not a seq, or is beyond the stream's last event"
        case .unauthorized: return "missing, malformed, expired, badly signed or revoked token; wrong admin key"
        case .sessionRevoked: return "the session was revoked while the stream was live"
        case .tokenExpired: return "the token expired mid-stream; resume with a fresh token"
        case .streamNotFound: return "unknown, expired, or another user's stream (never 403)"
        case .routeNotFound: return "no such route"
        case .methodNotAllowed: return "the path exists with other methods (`Allow` lists them)"
        case .resumeGap: return "events after `Last-Event-ID` are no longer retained (lossless resume off or text expired)"
        case .bodyTooLarge: return "the body exceeds `RELAY_MAX_BODY_BYTES`"
        case .tokenBudgetExhausted: return "the tier's monthly token budget is used up"
        case .tooManyStreams: return "the session already generates `RELAY_MAX_STREAMS_PER_SESSION` answers"
        case .internalError: return "request id collision, or the upstream call cannot be set up; retry"
        case .upstreamError: return "the upstream failed (connect, non-2xx, malformed or oversized stream)"
        case .notReady: return "Redis unreachable, draining, or at `RELAY_MAX_CONNECTIONS` (`Retry-After: 1`)"
        case .upstreamLost: return "the instance generating the answer stopped; retry the request"
        case .redisUnavailable: return "Redis was unreachable longer than `RELAY_REDIS_OUTAGE_GRACE`; resume later"
        case .streamLost: return "Redis no longer has the stream (restart without persistence, expiry); re-send the request"
        case .upstreamTimeout: return "the upstream sent nothing for the idle timeout, or connecting timed out"
        }
    }

    /// The README's error table (Markdown), one row per code in declaration order.
    public static var markdownTable: String {
        var out = "| status | code | sent | meaning |\n|---|---|---|---|\n"
        for c in allCases {
            out += "| \(c.status) | `\(c.rawValue)` | \(c.delivery.rawValue) | \(c.meaning) |\n"
        }
        return out
    }
}
