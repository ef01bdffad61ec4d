import CLibevent
import Glibc
import RelayCore

/// HTTP methods the relay routes (libevent's `evhttp_cmd_type`).
public enum HTTPMethod: String {
    case get = "GET", post = "POST", delete = "DELETE", head = "HEAD", put = "PUT", options = "OPTIONS", patch = "PATCH", other = "OTHER"

    public init(_ cmd: evhttp_cmd_type) {
        switch cmd {
        case EVHTTP_REQ_GET: self = .get
        case EVHTTP_REQ_POST: self = .post
        case EVHTTP_REQ_DELETE: self = .delete
        case EVHTTP_REQ_HEAD: self = .head
        case EVHTTP_REQ_PUT: self = .put
        case EVHTTP_REQ_OPTIONS: self = .options
        case EVHTTP_REQ_PATCH: self = .patch
        default: self = .other
        }
    }
}

/// One HTTP request being answered, wrapping libevent's `evhttp_request *`.
///
/// Either `respond…` once (a plain reply), or `startStream()` and then `write` chunks
/// and `endStream()`. libevent frees the request after the reply ends or the
/// connection closes; after that the exchange is inert (`isOpen == false`).
/// Loop thread only.
public final class HTTPExchange {
    @exclusivity(unchecked) private(set) var req: OpaquePointer?
    public let method: HTTPMethod
    /// The URI path, percent-encoding kept (route parameters are validated strictly).
    /// Emptied when a stream starts (routing is over; saves memory per idle stream).
    public private(set) var path: String
    /// The raw query string, or "". Emptied when a stream starts.
    public private(set) var query: String
    /// Called once if the client closes the connection while a stream is open, or before
    /// the reply was sent (a long-poll waiting for its answer).
    public var onClose: (() -> Void)?
    /// `true` between `startStream()` and `endStream()` / the client closing.
    @exclusivity(unchecked) private(set) var streaming = false
    /// The connection's gate (its one close callback); set by `HTTPListener` before routing.
    public weak var gate: ConnectionGate? {
        didSet {
            // However the connection ends (client gone, a rejected pipelined request, shutdown),
            // the exchange stops touching the request evhttp is about to free.
            gate?.onClose = { [weak self] in self?.connectionClosed() }
            gate?.requestRouted()
        }
    }
    /// Keeps the exchange alive while a stream is open (the stream's owners hold it weakly).
    private var selfWhileStreaming: HTTPExchange?
    /// While streaming: the connection's output buffer (its bufferevent's) and socket,
    /// looked up once in `startStream` instead of on every write. Valid while `req` is
    /// set: evhttp frees them only with the connection, and `connectionClosed` clears `req`.
    @exclusivity(unchecked) private(set) var output: OpaquePointer?
    @exclusivity(unchecked) private(set) var socket: Int32 = -1
    /// Whether the response uses the chunked coding (evhttp chose it in
    /// `evhttp_send_reply_start`: an HTTP/1.1 request) and may carry a body at all (not HEAD).
    @exclusivity(unchecked) private var chunked = false
    @exclusivity(unchecked) private var bodyAllowed = true
    /// The connection's loop, and the loop turn (its cached time, which libevent renews
    /// once per turn) of the last write straight to the socket.
    @exclusivity(unchecked) private var base: OpaquePointer?
    @exclusivity(unchecked) private var lastDirectTurn = timeval()
    /// The `retry:` field line still to be put in front of the stream's first event
    /// (`startStream(retry:)`); nil once written or when there is none.
    private var pendingRetry: String?

    /// The watch for the client closing while a reply is awaited (`watchForPeerClose`).
    private var closeWatch: OpaquePointer?

    deinit { stopCloseWatch() }

    public init(_ req: OpaquePointer) {
        self.req = req
        method = HTTPMethod(evhttp_request_get_command(req))
        var p = "/"
        var q = ""
        if let uri = evhttp_request_get_evhttp_uri(req) {
            if let cp = evhttp_uri_get_path(uri) { p = String(cString: cp) }
            if let cq = evhttp_uri_get_query(uri) { q = String(cString: cq) }
        }
        path = p.isEmpty ? "/" : p
        query = q
    }

    public var isOpen: Bool { req != nil }

    /// Every value of header `name` (case-insensitive), in order.
    public func headerValues(_ name: String) -> [String] {
        guard let req, let headers = evhttp_request_get_input_headers(req) else { return [] }
        var out: [String] = []
        var kv = headers.pointee.tqh_first
        while let e = kv {
            if let k = e.pointee.key, strcasecmp(k, name) == 0, let v = e.pointee.value {
                out.append(String(cString: v))
            }
            kv = e.pointee.next.tqe_next
        }
        return out
    }

    /// The first value of header `name`, or nil.
    public func header(_ name: String) -> String? {
        guard let req, let v = evhttp_find_header(evhttp_request_get_input_headers(req), name) else { return nil }
        return String(cString: v)
    }

    /// The value of query parameter `name` (percent-decoded, `+` as a space), or nil; the
    /// first when the query repeats it (`queryParameterValues` has them all). A decoded NUL
    /// (`%00`) stays in the value, so a parser sees it and refuses it; bytes that are not
    /// UTF-8 become U+FFFD.
    public func queryParameter(_ name: String) -> String? {
        queryParameterValues(name).first
    }

    /// Every value of query parameter `name`, in query order (percent-decoded as
    /// `queryParameter`); empty when absent. A parameter without `=` has the value "".
    public func queryParameterValues(_ name: String) -> [String] {
        guard !query.isEmpty else { return [] }
        var out: [String] = []
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count >= 1, parts[0] == name else { continue }
            let raw = parts.count == 2 ? String(parts[1]) : ""
            var size = 0
            guard let decoded = evhttp_uridecode(raw, 1, &size) else { out.append(raw); continue }
            defer { free(decoded) }
            // The decoded length, not C-string length: `%00` must not cut the value short.
            out.append(decoded.withMemoryRebound(to: UInt8.self, capacity: size) {
                String(decoding: UnsafeBufferPointer(start: $0, count: size), as: UTF8.self)
            })
        }
        return out
    }

    /// Percent-decodes a path segment (RFC 3986 §2.1); nil for a malformed escape or
    /// bytes that are not UTF-8.
    public static func percentDecoded(_ s: String) -> String? {
        var out: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let b = it.popFirst() {
            if b == 0x25 {
                guard it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) else { return nil }
                out.append(v)
                it = it.dropFirst(2)
            } else {
                out.append(b)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// The request body bytes (already fully received by evhttp, bounded by
    /// `evhttp_set_max_body_size`).
    public func body() -> [UInt8] {
        guard let req, let buf = evhttp_request_get_input_buffer(req) else { return [] }
        let n = evbuffer_get_length(buf)
        guard n > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: n)
        _ = out.withUnsafeMutableBytes { evbuffer_copyout(buf, $0.baseAddress, n) }
        return out
    }

    /// Peer address `ip:port`, for logs.
    public var peer: String {
        guard let req, let con = evhttp_request_get_connection(req) else { return "?" }
        var addr: UnsafeMutablePointer<CChar>?
        var port: UInt16 = 0
        evhttp_connection_get_peer(con, &addr, &port)
        return addr.map { "\(String(cString: $0)):\(port)" } ?? "?"
    }

    public func setHeader(_ name: String, _ value: String) {
        guard let req else { return }
        evhttp_add_header(evhttp_request_get_output_headers(req), name, value)
    }

    /// The headers every response carries (the Durable Streams protocol's browser-security
    /// section; Fetch standard §3.5 and §3.7): `X-Content-Type-Options: nosniff`, so a browser
    /// never sniffs an answer as another type, and `Cross-Origin-Resource-Policy: same-origin`,
    /// so no other site embeds a user's answer (`fetch` and `EventSource` with CORS are not
    /// affected).
    public static let securityHeaders = [("X-Content-Type-Options", "nosniff"), ("Cross-Origin-Resource-Policy", "same-origin")]

    private func setSecurityHeaders() {
        for (k, v) in HTTPExchange.securityHeaders { setHeader(k, v) }
    }

    /// Answers a `HEAD` from a plan, without the `GET`'s content: no `Content-Length` (RFC 9110
    /// §9.3.2 lets a server omit it; a HEAD response has no content, RFC 9112 §6.3). Ends the exchange.
    public func respondHead(status: Int, contentType: String, headers: [(String, String)] = []) {
        respond(status: status, contentType: contentType, body: "", headers: headers, contentLength: false)
    }

    /// Sends a complete reply with `body` and ends the exchange.
    public func respond(status: Int, contentType: String, body: String, headers: [(String, String)] = []) {
        respond(status: status, contentType: contentType, body: body, headers: headers, contentLength: true)
    }

    private func respond(status: Int, contentType: String, body: String, headers: [(String, String)], contentLength: Bool) {
        guard let req else { return }
        setHeader("Content-Type", contentType)
        setHeader("Cache-Control", "no-store")
        setSecurityHeaders()
        for (k, v) in headers { setHeader(k, v) }
        let buf = evbuffer_new()
        if method == .head {
            // HEAD: the same header section, no content (RFC 9110 §9.3.2). libevent 2.1
            // would send the body and no Content-Length, so the next response on the
            // connection would be misread.
            if contentLength { setHeader("Content-Length", String(body.utf8.count)) }
        } else {
            _ = body.withCString { evbuffer_add(buf, $0, strlen($0)) }
        }
        stopCloseWatch()
        evhttp_send_reply(req, Int32(status), HTTPExchange.reason(status), buf)
        evbuffer_free(buf)
        self.req = nil
        gate?.requestAnswered()
    }

    /// Sends `204 No Content` (no body; `Content-Type` only when given: a 204 ending an event
    /// stream names the stream's type, so SSE clients that check it stop cleanly) and ends the
    /// exchange.
    public func respondNoContent(contentType: String? = nil, headers: [(String, String)] = []) {
        respondWithoutContent(204, contentType: contentType, headers: headers)
    }

    /// Sends `304 Not Modified` (RFC 9110 §15.4.5: no content; the validator and the headers
    /// every response has) and ends the exchange.
    public func respondNotModified(headers: [(String, String)]) {
        respondWithoutContent(304, contentType: nil, headers: headers)
    }

    /// A reply that has no content by its status (204, 304: RFC 9110 §15.3.5, §15.4.5).
    private func respondWithoutContent(_ status: Int, contentType: String?, headers: [(String, String)]) {
        guard let req else { return }
        if let contentType { setHeader("Content-Type", contentType) }
        setHeader("Cache-Control", "no-store")
        setSecurityHeaders()
        for (k, v) in headers { setHeader(k, v) }
        stopCloseWatch()
        evhttp_send_reply(req, Int32(status), HTTPExchange.reason(status), nil)
        self.req = nil
        gate?.requestAnswered()
    }

    /// Sends `error` as `{"error":{"code","message"}}` with its status. An overload answer
    /// (`RetryAfter.applies`: every 503, `429 too_many_streams`) gets a `Retry-After` drawn
    /// for this response (`RetryAfter.overload`, 1–3 s) unless `headers` has one.
    public func respond(_ error: APIError, headers: [(String, String)] = []) {
        var headers = headers
        if RetryAfter.applies(status: error.status, code: error.code),
           !headers.contains(where: { $0.0.lowercased() == "retry-after" }) {
            var random = SystemRandomNumberGenerator()
            headers.append(("Retry-After", RetryAfter.overload.headerValue(using: &random)))
        }
        respond(status: error.status, contentType: "application/json", body: error.body, headers: headers)
    }

    /// While the reply is awaited (a long-poll waiting for an event), watches the socket
    /// for the client closing it: evhttp reads nothing more once a request is complete, so
    /// it would notice only when the reply is written. On end of file or a socket error the
    /// connection is freed at once, which runs `onClose` (through the gate's close
    /// callback). Bytes the client sends meanwhile (a pipelined request) are evhttp's to
    /// read: the watch ends without consuming them. Ended by any reply. Loop thread only.
    public func watchForPeerClose() {
        guard let req, closeWatch == nil, let con = evhttp_request_get_connection(req),
              let bev = evhttp_connection_get_bufferevent(con), let base = evhttp_connection_get_base(con) else { return }
        let fd = bufferevent_getfd(bev)
        guard fd >= 0 else { return }
        closeWatch = event_new(base, fd, Int16(EV_READ), { fd, _, arg in
            let me = Unmanaged<HTTPExchange>.fromOpaque(arg!).takeUnretainedValue()
            withExtendedLifetime(me) { me.peerReadable(Int32(fd)) }
        }, Unmanaged.passUnretained(self).toOpaque())
        event_add(closeWatch, nil)
    }

    private func peerReadable(_ fd: Int32) {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            event_add(closeWatch, nil)
            return
        }
        stopCloseWatch()
        guard n <= 0, let req, let con = evhttp_request_get_connection(req) else { return }
        // End of file or an error: the client is gone.
        evhttp_connection_free(con)
    }

    private func stopCloseWatch() {
        guard let w = closeWatch else { return }
        closeWatch = nil
        event_free(w)
    }

    /// Starts a chunked 200 response; headers must be set before. `retry`, an SSE field line
    /// (`SSEFrame.retry`), is written in front of the first event (the first chunk whose text
    /// is not a comment), in that event's block: WHATWG HTML §9.2.6 dispatches nothing for a
    /// block without `data:`, so `retry:` never travels alone.
    public func startStream(retry: String? = nil) {
        guard let req else { return }
        stopCloseWatch()
        setSecurityHeaders()
        evhttp_send_reply_start(req, 200, "OK")
        streaming = true
        pendingRetry = retry
        chunked = evhttp_find_header(evhttp_request_get_output_headers(req), "Transfer-Encoding")
            .map { strcasecmp($0, "chunked") == 0 } ?? false
        bodyAllowed = method != .head
        // Everything needed from the request has been read; its headers (a bearer token,
        // proxy headers …) would otherwise stay allocated for the whole stream.
        evhttp_clear_headers(evhttp_request_get_input_headers(req))
        // The response head is already in the output buffer; its header list would stay
        // allocated for the whole stream too. evhttp reads it once more when the stream ends,
        // for `Connection: close` only (`evhttp_is_request_connection_close`): that one stays.
        if let out = evhttp_request_get_output_headers(req) {
            let closes = evhttp_find_header(out, "Connection").map { strcasecmp($0, "close") == 0 } ?? false
            evhttp_clear_headers(out)
            if closes { evhttp_add_header(out, "Connection", "close") }
        }
        path = ""
        query = ""
        if let body = evhttp_request_get_input_buffer(req) { evbuffer_drain(body, evbuffer_get_length(body)) }
        if let con = evhttp_request_get_connection(req) {
            // The request timeout (`evhttp_set_timeout`) is a read timeout; a stream's
            // client sends nothing more, so lift it for this connection. A peer that
            // vanished is found by TCP instead: unacknowledged data for 60 s fails the
            // socket (TCP_USER_TIMEOUT, tcp(7)), and heartbeats guarantee there is data.
            if let gate {
                gate.liftReadTimeout()  // the gate sets it per request otherwise
            } else {
                var day = timeval(tv_sec: 86_400, tv_usec: 0)
                evhttp_connection_set_timeout_tv(con, &day)
            }
            if let bev = evhttp_connection_get_bufferevent(con) {
                output = bufferevent_get_output(bev)
                socket = Int32(bufferevent_getfd(bev))
                base = evhttp_connection_get_base(con)
                var ms: UInt32 = 60_000
                _ = setsockopt(socket, Int32(IPPROTO_TCP), 18 /* TCP_USER_TIMEOUT */, &ms,
                               socklen_t(MemoryLayout<UInt32>.size))
            }
            selfWhileStreaming = self
        }
    }

    /// evhttp frees the connection: the request goes with it.
    private func connectionClosed() {
        guard req != nil else { return }
        req = nil
        forgetConnection()
        streaming = false
        let cb = onClose
        onClose = nil
        selfWhileStreaming = nil
        cb?()
    }

    /// Writes `text` as one chunk (nothing for an empty text). Returns false when the
    /// exchange is closed.
    @discardableResult
    public func write(_ text: String) -> Bool {
        guard req != nil, streaming else { return false }
        guard !text.isEmpty else { return true }
        return write(WireFrame(text: text))
    }

    /// Writes an already framed chunk (`WireFrame`, shared by every subscriber of an
    /// event): the whole chunk on a chunked response, its data alone otherwise (an
    /// HTTP/1.0 client), nothing for HEAD. Returns false when the exchange is closed.
    ///
    /// Write-through: when nothing is queued in the connection's output buffer, the
    /// bytes go to the socket at once (`send`, non-blocking) and only what the kernel
    /// does not take is queued in the buffer, whose write event libevent then arms.
    /// Queueing everything (what `evhttp_send_reply_chunk` does) costs, per event and
    /// connection, a temporary evbuffer, a `printf` of the chunk size, a buffer chain
    /// allocation and two `epoll_ctl`s (arm and disarm the write event) besides the
    /// `writev` itself (profiled, docs/BENCHMARKS.md). At most one direct write per connection and
    /// loop turn: further writes in the same turn (a burst of events, a relay catching
    /// up) are queued and leave in one `writev` when libevent flushes the buffer, so a
    /// busy relay makes fewer syscalls, not more. Bytes keep their order: the socket is
    /// written directly only when the buffer is empty. A failed `send` (peer gone)
    /// queues the bytes too, so libevent's own write finds the error and closes the
    /// connection.
    @discardableResult
    public func write(_ frame: WireFrame) -> Bool {
        guard req != nil, streaming else { return false }
        guard bodyAllowed, let out = output else { return true }
        if let retry = pendingRetry, frame.withUnsafeBytes({ $0[frame.body.lowerBound] }) != UInt8(ascii: ":") {
            pendingRetry = nil
            return write(WireFrame(text: retry + frame.text))
        }
        let range = chunked ? 0..<frame.count : frame.body
        frame.withUnsafeBytes { all in
            let p = UnsafeRawBufferPointer(rebasing: all[range])
            guard let start = p.baseAddress, p.count > 0 else { return }
            var sent = 0
            if socket >= 0, evbuffer_get_length(out) == 0, let base {
                var turn = timeval()
                event_base_gettimeofday_cached(base, &turn)
                if turn.tv_sec != lastDirectTurn.tv_sec || turn.tv_usec != lastDirectTurn.tv_usec {
                    lastDirectTurn = turn
                    let n = send(socket, start, p.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                    if n > 0 { sent = n }
                }
            }
            if sent < p.count { evbuffer_add(out, start + sent, p.count - sent) }
        }
        return true
    }

    /// Drops the cached output buffer and socket (the connection is ending or gone).
    private func forgetConnection() {
        stopCloseWatch()
        output = nil
        socket = -1
        base = nil
    }

    /// Bytes accepted by `write` but not yet sent to the client's socket.
    public var pendingOutputBytes: Int {
        guard req != nil, let output else { return 0 }
        return evbuffer_get_length(output)
    }

    /// Ends a stream (the last chunk) and releases the request.
    public func endStream() {
        guard let req else { return }
        gate?.restoreReadTimeout()  // lifted for the stream (`startStream`)
        evhttp_send_reply_end(req)
        self.req = nil
        gate?.requestAnswered()
        forgetConnection()
        streaming = false
        onClose = nil
        selfWhileStreaming = nil
    }

    /// How long `abort()` waits for the client to take the queued bytes and the terminator
    /// before it resets the connection, ms.
    public static let abortGraceMs: UInt64 = 5000

    /// Ends the response without a terminal event (drain, slow consumer) and closes the
    /// connection: the response ends properly — the last chunk `0\r\n\r\n` (RFC 9112 §7.1)
    /// after what is queued, or, unchunked (HTTP/1.0), the close itself — so a client or proxy
    /// sees a complete response, not a broken one, and an `EventSource` reconnects with
    /// `Last-Event-ID` (WHATWG HTML §9.2.3: the response ended without the stream being
    /// closed). `Connection: close` has evhttp close the connection once that is written.
    ///
    /// Bounded: a client that has not taken everything (a slow consumer far behind)
    /// within `graceMs` is reset (`SO_LINGER` 0, `ConnectionGate.closeWithin`), so neither the
    /// relay's buffer nor the kernel's is held for a client that does not read. The client
    /// resumes from the last complete event it got; nothing is lost.
    public func abort() { abort(graceMs: Self.abortGraceMs) }

    /// `abort()` with another bound, ms.
    public func abort(graceMs: UInt64) {
        guard let req else { return }
        if let out = evhttp_request_get_output_headers(req),
           evhttp_find_header(out, "Connection").map({ strcasecmp($0, "close") == 0 }) != true {
            evhttp_add_header(out, "Connection", "close")
        }
        gate?.closeWithin(ms: graceMs)
        self.req = nil
        forgetConnection()
        streaming = false
        onClose = nil
        selfWhileStreaming = nil
        evhttp_send_reply_end(req)
    }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 501: return "Not Implemented"
        case 505: return "HTTP Version Not Supported"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }
}
