import Foundation

/// One HTTP request as the client kit sends it, independent of the HTTP stack.
public struct TransportRequest: Sendable, Equatable {
    /// `GET`, `POST` or `DELETE`.
    public var method: String
    /// The absolute URL.
    public var url: URL
    /// Header fields in order (name, value).
    public var headers: [(name: String, value: String)]
    /// The request body (`POST`), else `nil`.
    public var body: Data?
    /// Give up after this long without completing (one-shot requests) or, for a stream,
    /// without receiving any byte, ms.
    public var timeoutMs: Int64

    public init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: Data? = nil, timeoutMs: Int64 = 40_000) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
    }

    /// A header value by case-insensitive name (RFC 9110 §5.1).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    public static func == (a: TransportRequest, b: TransportRequest) -> Bool {
        a.method == b.method && a.url == b.url && a.body == b.body && a.timeoutMs == b.timeoutMs
            && a.headers.map { [$0.name, $0.value] } == b.headers.map { [$0.name, $0.value] }
    }
}

/// What one streaming HTTP exchange reports, in order: `response` once, `data` any
/// number of times as the body arrives, then `end` once (also after a failure before
/// any response).
public enum ConnectionEvent: Sendable, Equatable {
    /// The response head: status, `Content-Type`, and `Retry-After` (RFC 9110 §10.2.3) when present.
    case response(status: Int, contentType: String?, retryAfter: String?)
    /// A piece of the body, as it arrived.
    case data(Data)
    /// The body ended: `nil` for a clean end, else the transport error's description.
    case end(error: String?)
}

/// A streaming exchange in progress.
public protocol TransportConnection: Sendable {
    /// Cancels the exchange. Events may still be delivered until the `end` it causes;
    /// the kit ignores them.
    func cancel()
}

/// The HTTP stack the kit runs on. `URLSessionTransport` is the default (and the one
/// to use on Apple platforms); the Linux CLI uses a libcurl transport (`RelayClientCurl`).
///
/// Implementations deliver a connection's events serially, in order.
public protocol RelayTransport: Sendable {
    /// Starts `request` at once; its events go to `onEvent`.
    func stream(_ request: TransportRequest, onEvent: @escaping @Sendable (ConnectionEvent) -> Void) -> any TransportConnection
    /// Performs a one-shot request (budget, `DELETE`) and returns its status and whole body.
    /// - Throws: a transport error (unreachable, timed out after `timeoutMs`).
    func fetch(_ request: TransportRequest) async throws -> (status: Int, body: Data)
}
