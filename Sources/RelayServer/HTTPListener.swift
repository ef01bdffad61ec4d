import CLibevent
import RelayCore
import RelayLoop
import RelayConfiguration

/// The worker's HTTP/1.1 listener (DESIGN §1): one `evhttp` on the worker's loop,
/// accepting on the worker's `SO_REUSEPORT` socket, handing every request to
/// `handler` as an `HTTPExchange`. Owns the `evhttp` handle; loop thread only.
///
/// Connection-level policy (allowed methods, body and header size limits, the
/// request timeout) is set here, so request-head filters and accept backoff have one
/// place to go.
final class HTTPListener {
    private var http: OpaquePointer?
    private var boundSocket: OpaquePointer?
    private let handler: (HTTPExchange) -> Void

    /// - Parameters:
    ///   - listenFD: a bound, listening, non-blocking socket (one per worker, `SO_REUSEPORT`).
    ///   - handler: called on the loop thread for every complete request.
    /// - Throws: `LoopError.cannotCreate` when `evhttp` cannot be created or bound.
    init(loop: EventLoop, config: RelayConfig, listenFD: Int32, handler: @escaping (HTTPExchange) -> Void) throws {
        self.handler = handler
        guard let h = evhttp_new(loop.base) else { throw LoopError.cannotCreate }
        http = h
        let methods = EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_DELETE.rawValue
            | EVHTTP_REQ_HEAD.rawValue | EVHTTP_REQ_PUT.rawValue | EVHTTP_REQ_OPTIONS.rawValue | EVHTTP_REQ_PATCH.rawValue
        evhttp_set_allowed_methods(h, UInt16(methods))
        evhttp_set_max_body_size(h, Int(config.maxBodyBytes))
        evhttp_set_max_headers_size(h, 160 * 1024)  // room for a 100 KB bogus token to reach the 401 path
        // Requests that never finish sending are dropped after this long; a stream in
        // progress is not affected (checked by StreamTests.testLongQuietStreamOutlivesTheRequestTimeout).
        evhttp_set_timeout(h, Int32(max(1, config.requestTimeoutMs / 1000)))
        evhttp_set_gencb(h, { req, arg in
            guard let req, let arg else { return }
            Unmanaged<HTTPListener>.fromOpaque(arg).takeUnretainedValue().handler(HTTPExchange(req))
        }, Unmanaged.passUnretained(self).toOpaque())
        guard let bound = evhttp_accept_socket_with_handle(h, listenFD) else { throw LoopError.cannotCreate }
        boundSocket = bound
    }

    deinit { close() }

    /// Stops accepting new connections (drain); open ones keep working.
    func stopAccepting() {
        if let h = http, let b = boundSocket {
            boundSocket = nil
            evhttp_del_accept_socket(h, b)
        }
    }

    /// Frees the listener and every connection it holds.
    func close() {
        if let h = http {
            http = nil
            evhttp_free(h)
        }
    }
}
