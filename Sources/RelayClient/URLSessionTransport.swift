import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default `RelayTransport`: `URLSession` with a data delegate, which hands over the
/// body chunk by chunk as it arrives. The transport to use on Apple platforms (it
/// follows the system's proxy, VPN, cellular and background policies). On Linux it
/// works too, but FoundationNetworking wakes its threads about ten times per event;
/// the CLI uses `RelayClientCurl.CurlTransport` there.
public struct URLSessionTransport: RelayTransport {
    /// The session configuration (e.g. with test `protocolClasses`). Its request
    /// timeout is raised to at least 40 s — longer than two of the relay's 15 s
    /// heartbeats, so only a dead connection times out.
    public let configuration: URLSessionConfiguration

    public init(configuration: URLSessionConfiguration = .default) {
        let c = configuration
        c.timeoutIntervalForRequest = max(c.timeoutIntervalForRequest, 40)
        c.requestCachePolicy = .reloadIgnoringLocalCacheData
        c.urlCache = nil
        self.configuration = c
    }

    public func stream(_ request: TransportRequest, onEvent: @escaping @Sendable (ConnectionEvent) -> Void) -> any TransportConnection {
        URLSessionConnection(request: Self.urlRequest(request), configuration: configuration, onEvent: onEvent)
    }

    public func fetch(_ request: TransportRequest) async throws -> (status: Int, body: Data) {
        let req = Self.urlRequest(request)
        let configuration = self.configuration
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<(status: Int, body: Data), Error>) in
            let session = URLSession(configuration: configuration)
            let task = session.dataTask(with: req) { @Sendable data, response, error in
                session.finishTasksAndInvalidate()
                if let error { return c.resume(throwing: error) }
                c.resume(returning: ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()))
            }
            task.resume()
        }
    }

    static func urlRequest(_ r: TransportRequest) -> URLRequest {
        var req = URLRequest(url: r.url)
        req.httpMethod = r.method
        req.httpBody = r.body
        req.timeoutInterval = Double(r.timeoutMs) / 1000
        for h in r.headers { req.setValue(h.value, forHTTPHeaderField: h.name) }
        return req
    }
}

/// One streaming exchange through `URLSession`. Its events are delivered to `onEvent`
/// from the session's delegate queue, serially.
///
/// The class owns its session; `cancel()` cancels the task and invalidates the
/// session (a `URLSession` keeps its delegate alive until invalidated). Mutable state
/// is only touched under `lock`, hence `@unchecked Sendable`. The delegate methods
/// have the SDK's signatures (`@Sendable` completion handlers).
final class URLSessionConnection: NSObject, URLSessionDataDelegate, TransportConnection, @unchecked Sendable {
    private let onEvent: @Sendable (ConnectionEvent) -> Void
    private var session: URLSession?
    private var task: URLSessionDataTask?
    private let lock = NSLock()

    /// Starts `request` at once.
    init(request: URLRequest, configuration: URLSessionConfiguration, onEvent: @escaping @Sendable (ConnectionEvent) -> Void) {
        self.onEvent = onEvent
        super.init()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let s = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        let t = s.dataTask(with: request)
        lock.withLock { session = s; task = t }
        t.resume()
    }

    func cancel() {
        let (s, t) = lock.withLock { (session, task) }
        t?.cancel()
        s?.invalidateAndCancel()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        onEvent(.response(status: http?.statusCode ?? 0, contentType: http?.value(forHTTPHeaderField: "Content-Type"),
                          retryAfter: http?.value(forHTTPHeaderField: "Retry-After"),
                          stream: StreamReadHeaders { http?.value(forHTTPHeaderField: $0) }))
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        onEvent(.data(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        onEvent(.end(error: error.map { String(describing: $0) }))
        session.finishTasksAndInvalidate()
    }
}
