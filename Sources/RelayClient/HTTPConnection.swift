import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one HTTP exchange reports, in order: `response` once, `data` any number of
/// times as the body arrives, then `end` once.
enum ConnectionEvent: Sendable {
    case response(status: Int, contentType: String?)
    case data(Data)
    /// The body ended: `nil` for a clean end, else the transport error's description.
    case end(error: String?)
}

/// One streaming HTTP exchange through `URLSession` with a data delegate, which hands
/// over the body chunk by chunk as it arrives (on Linux too). Its events are delivered
/// to `onEvent` from the session's delegate queue, serially.
///
/// The class owns its session; `cancel()` cancels the task and invalidates the
/// session (a `URLSession` keeps its delegate alive until invalidated). Mutable state
/// is only touched on the delegate queue, hence `@unchecked Sendable`.
final class HTTPConnection: NSObject, URLSessionDataDelegate, @unchecked Sendable {
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

    /// Cancels the exchange; no more events are delivered after the `end` it causes.
    func cancel() {
        let (s, t) = lock.withLock { (session, task) }
        t?.cancel()
        s?.invalidateAndCancel()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        let ct = http?.value(forHTTPHeaderField: "Content-Type")
        onEvent(.response(status: http?.statusCode ?? 0, contentType: ct))
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

/// A one-shot request whose whole body is awaited (budget, `DELETE`).
enum HTTPFetch {
    /// Performs `request`; returns the status and body.
    static func perform(_ request: URLRequest, configuration: URLSessionConfiguration) async throws -> (Int, Data) {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<(Int, Data), Error>) in
            let session = URLSession(configuration: configuration)
            let task = session.dataTask(with: request) { data, response, error in
                session.finishTasksAndInvalidate()
                if let error { return c.resume(throwing: error) }
                c.resume(returning: ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()))
            }
            task.resume()
        }
    }
}
