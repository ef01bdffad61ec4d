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
    /// The response head: status, `Content-Type`, `Retry-After` (RFC 9110 §10.2.3) when
    /// present, and the fields of a long-poll read (`StreamReadHeaders`; empty otherwise).
    case response(status: Int, contentType: String?, retryAfter: String?, stream: StreamReadHeaders = StreamReadHeaders())
    /// A piece of the body, as it arrived.
    case data(Data)
    /// The body ended: `nil` for a clean end, else the transport error's description.
    case end(error: String?)
}

/// The response fields of the relay's long-poll / catch-up read (Durable Streams read
/// protocol shapes: `Stream-Next-Offset`, `Stream-Closed`, `Stream-Up-To-Date`,
/// `Stream-Cursor`). A transport fills them from the response head; absent fields stay `nil`
/// / `false`.
public struct StreamReadHeaders: Sendable, Equatable {
    /// `Stream-Next-Offset`: the offset to read from next (the relay's: the seq of the last
    /// event in the body, zero-padded to 20 digits).
    public var nextOffset: String?
    /// `Stream-Closed: true`: the answer has ended and the body reaches its end.
    public var closed: Bool
    /// `Stream-Up-To-Date: true`: the body reaches the stored tail.
    public var upToDate: Bool
    /// `Stream-Cursor`, sent back as `cursor` on the next read.
    public var cursor: String?

    /// The header names, lowercased.
    public static let names = ["stream-next-offset", "stream-closed", "stream-up-to-date", "stream-cursor"]

    public init(nextOffset: String? = nil, closed: Bool = false, upToDate: Bool = false, cursor: String? = nil) {
        self.nextOffset = nextOffset
        self.closed = closed
        self.upToDate = upToDate
        self.cursor = cursor
    }

    /// Reads the fields through `field` (a case-insensitive header lookup by name).
    public init(field: (String) -> String?) {
        let closed = field("Stream-Closed")?.trimming(" \t").lowercased() == "true"
        let upToDate = field("Stream-Up-To-Date")?.trimming(" \t").lowercased() == "true"
        self.init(nextOffset: field("Stream-Next-Offset")?.trimming(" \t"), closed: closed,
                  upToDate: upToDate, cursor: field("Stream-Cursor")?.trimming(" \t"))
    }
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
