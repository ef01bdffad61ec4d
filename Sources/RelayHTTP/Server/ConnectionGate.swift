import CLibevent
import Glibc
import RelayCore
import RelayLoop

/// The strict front of one client connection (docs/PROTOCOL.md §11): every inbound byte goes
/// through a `RequestFramer` before evhttp may parse it, and a request must arrive whole within
/// `RELAY_REQUEST_TIMEOUT` of its first byte.
///
/// How it sits in front of evhttp: `HTTPListener`'s `evhttp_set_bevcb` supplies each
/// connection's socket bufferevent and puts an input-buffer callback on it
/// (`evbuffer_add_cb`). That callback runs inside the bufferevent's read, after the bytes are
/// appended and before evhttp's read callback sees them. It feeds the new bytes to the framer;
/// while a request head is incomplete the bytes are moved aside (`held`), so evhttp never parses
/// a head the framer has not accepted; once the head is accepted, the held bytes go back in
/// front of the input and evhttp reads them; body bytes pass as they come. (A filtering
/// bufferevent would be the textbook tool, but libevent 2.1.12's filter does not forward
/// `bufferevent_setfd`, which evhttp calls on the connection's bufferevent after `bevcb`.)
///
/// On a rejection (a bad head, the deadline, the cap on pending requests) the relay's JSON
/// error (status, `Content-Type: application/json`, `Connection: close`, `Allow` for 405) is
/// written straight on the socket, the socket is half-closed, a dup of it lingers briefly to
/// read and discard what the client still sends (so the kernel does not answer it with a reset
/// that could destroy the response in flight), and evhttp's connection is freed on the next
/// loop turn. evhttp never sees the rejected bytes.
///
/// Lifetime: created on the connection's first inbound byte (a connection that never sends one
/// costs nothing) and owned by `HTTPListener` until evhttp frees the connection, which the gate
/// learns from the connection's close callback. An `HTTPExchange` on this connection hears of
/// the close through `onClose` (the one close callback evhttp has per connection belongs to
/// the gate). Loop thread only.
public final class ConnectionGate {
    /// evhttp's connection (`struct evhttp_connection *`), valid until `connectionClosed()`.
    public let connection: OpaquePointer
    /// The connection's socket bufferevent (owned by evhttp).
    public let bufferevent: OpaquePointer
    /// Called once when evhttp frees the connection (client closed, reset, timeout, shutdown).
    public var onClose: (() -> Void)?

    private unowned let listener: any ConnectionGateHost
    /// The framer of the request in progress; `nil` between requests (a fresh framer is what
    /// a finished one returns to), so an open stream's connection does not keep one (memory
    /// per idle connection, docs/BENCHMARKS.md). Its `limits` are the listener's.
    private var framer: FramerBox?
    private let limits: RequestHeadValidator.Limits
    private var inBody = false
    /// Bytes of an incomplete head, moved aside from evhttp; made when first needed and freed
    /// once they are given back (most heads arrive in one read and never need it).
    private var held: OpaquePointer?
    private var reinserting = false
    /// Stream offsets count the bytes that entered the connection's stream (fed to the framer),
    /// minus empty lines removed; `held` + input always end at `streamEnd`.
    private var streamEnd = 0
    /// The stream offset of the current (or next) request's first byte, when known: always at
    /// a request that starts a read, and after a request with a `Content-Length` body.
    private var requestStart: Int?
    private var nextRequestStart: Int?
    public private(set) var isPending = false
    /// The listener's serial number of this connection (its age order).
    public let serial: UInt64
    private var headSeen = false
    public private(set) var isRejected = false
    /// The whole-request deadline while a request is in progress, then (after a rejection)
    /// the free on the next loop turn (`timerFrees`); made when first needed, dropped when a
    /// request ends (never from inside its own callback).
    private var timer: LoopTimer?
    private var timerFrees = false
    private let loop: EventLoop
    private let timeoutMs: UInt64
    /// Requests of this connection handed to an `HTTPExchange` whose response has not been
    /// handed to evhttp whole (a stream still running, a long-poll or a parked request still
    /// waiting). While any is, a rejection writes no answer: it would land inside that
    /// response, or be taken by the client for its answer (RFC 9112 §9.3.2: responses come in
    /// request order).
    private var unansweredRequests = 0
    /// A stream on this connection lifted evhttp's read timeout (`liftReadTimeout`): the gate
    /// no longer sets it.
    private var readTimeoutLifted = false

    public init(listener: any ConnectionGateHost, loop: EventLoop, connection: OpaquePointer, bufferevent: OpaquePointer,
         limits: RequestHeadValidator.Limits, timeoutMs: Int, serial: UInt64 = 0) {
        self.listener = listener
        self.serial = serial
        self.loop = loop
        self.connection = connection
        self.bufferevent = bufferevent
        self.limits = limits
        self.timeoutMs = UInt64(timeoutMs)
    }

    deinit {
        if let held { evbuffer_free(held) }
    }

    /// Arms the connection's one timer: the free on the next loop turn when `frees`, else the
    /// whole-request deadline.
    private func scheduleTimer(afterMs ms: UInt64, frees: Bool) {
        timerFrees = frees
        if timer == nil {
            // The gate owns the timer, which cannot fire after the gate is gone.
            timer = LoopTimer(loop: loop) { [unowned self] in
                if timerFrees { freeConnection() } else { deadlinePassed() }
            }
        }
        timer?.schedule(afterMs: ms)
    }

    /// Sets evhttp's read-idle timeout of this connection, ms (it closes the connection
    /// without a response when it fires).
    private func setReadTimeout(ms: UInt64) {
        guard !readTimeoutLifted else { return }
        var tv = timeval(tv_sec: Int(ms / 1000), tv_usec: Int(ms % 1000) * 1000)
        evhttp_connection_set_timeout_tv(connection, &tv)
    }

    /// How much later than the gate's deadline evhttp's read-idle timeout may fire while a
    /// request is in progress, ms: the gate's 408 must come first (docs/PROTOCOL.md §11.3).
    public static let readTimeoutMarginMs: UInt64 = 1_000

    /// A stream's response has started on this connection: its client sends nothing more, so
    /// evhttp's read timeout is lifted for the rest of the connection (a day), and the gate no
    /// longer sets it. A vanished peer is found by TCP (`TCP_USER_TIMEOUT`, `HTTPExchange`).
    public func liftReadTimeout() {
        var day = timeval(tv_sec: 86_400, tv_usec: 0)
        evhttp_connection_set_timeout_tv(connection, &day)
        readTimeoutLifted = true
    }

    /// evhttp handed a request of this connection to an `HTTPExchange` (`HTTPExchange.gate`).
    public func requestRouted() { unansweredRequests += 1 }

    /// That exchange's response was handed to evhttp whole (a reply, or a stream's end).
    public func requestAnswered() { unansweredRequests = max(0, unansweredRequests - 1) }

    /// The stream's response ended and the connection stays open (keep-alive): evhttp's read
    /// timeout is set again, so an idle connection is closed after `RELAY_REQUEST_TIMEOUT`
    /// like any other (docs/LIMITS.md) instead of holding its descriptor for the lifted day.
    public func restoreReadTimeout() {
        readTimeoutLifted = false
        setReadTimeout(ms: isPending ? timeoutMs + Self.readTimeoutMarginMs : timeoutMs)
    }

    /// The methods some route of the relay serves: the `Allow` of the gate's 405.
    public static let servedMethods = "GET, HEAD, POST, DELETE"

    /// The connection's input buffer got `added` bytes at its end (inside the bufferevent's
    /// read, before evhttp's read callback).
    public func inputGrew(_ input: OpaquePointer, added: Int) {
        guard !reinserting, added > 0 else { return }
        if isRejected {
            evbuffer_drain(input, evbuffer_get_length(input))
            return
        }
        let total = evbuffer_get_length(input)
        var bytes = [UInt8](repeating: 0, count: added)
        var from = evbuffer_ptr()
        evbuffer_ptr_set(input, &from, total - added, EVBUFFER_PTR_SET)
        _ = bytes.withUnsafeMutableBytes { evbuffer_copyout_from(input, &from, $0.baseAddress, added) }
        let framer: FramerBox
        if let f = self.framer {
            framer = f
        } else {
            requestStart = streamEnd
            framer = FramerBox(limits: limits)
            self.framer = framer
        }
        streamEnd += added
        for event in framer.value.feed(bytes) {
            switch event {
            case .head(let head):
                inBody = true
                if !headSeen {
                    headSeen = true
                    listener.firstHeadArrived(self)
                }
                if !["POST", "PUT", "PATCH"].contains(head.method), head.framing != .none, head.framing != .length(0) {
                    // evhttp reads no body for GET, HEAD, DELETE and OPTIONS whatever the
                    // framing says (libevent 2.1 `evhttp_method_may_have_body`), so it would
                    // parse the content as the next request. Content on these methods has no
                    // defined meaning (RFC 9110 §9.3.1, §9.3.2, §9.3.5, §9.3.7): refused.
                    listener.countHeadRejection()
                    reject(APIError(.invalidRequest, "\(head.method) requests carry no content here"), allow: nil, input: input)
                    return
                }
                if head.leadingEmptyLineBytes > 0 {
                    // Empty lines before the request line are ignored (RFC 9112 §2.2); evhttp
                    // would take the first one for a request line, so they are removed here.
                    let combined = (held.map { evbuffer_get_length($0) } ?? 0) + evbuffer_get_length(input)
                    guard let s = requestStart, case let start = combined - (streamEnd - s), start >= 0 else {
                        listener.countHeadRejection()
                        reject(APIError(.invalidRequest, "empty lines before a pipelined request line"), allow: nil, input: input)
                        return
                    }
                    reinsertHeld(into: input)
                    let before = evbuffer_new()
                    evbuffer_remove_buffer(input, before, start)
                    evbuffer_drain(input, head.leadingEmptyLineBytes)
                    reinserting = true
                    evbuffer_prepend_buffer(input, before)
                    reinserting = false
                    evbuffer_free(before)
                    streamEnd -= head.leadingEmptyLineBytes
                }
                switch head.framing {
                case .none: nextRequestStart = requestStart.map { $0 + head.headBytes - head.leadingEmptyLineBytes }
                case .length(let k): nextRequestStart = requestStart.map { $0 + head.headBytes - head.leadingEmptyLineBytes + k }
                case .chunked: nextRequestStart = nil
                }
                // evhttp parses the target again (`evhttp_uri_parse_with_flags`, non-conformant
                // mode) and answers its own HTML 400 when that fails (an absolute-form target
                // with a bad authority): refuse those here first, in the relay's JSON.
                if !head.target.hasPrefix("/"), evhttp_uri_parse_with_flags(head.target, UInt32(EVHTTP_URI_NONCONFORMANT)).map({ evhttp_uri_free($0); return true }) != true {
                    listener.countHeadRejection()
                    reject(APIError(.invalidRequest, "request-target is not a valid URI"), allow: nil, input: input)
                    return
                }
            case .endOfRequest:
                inBody = false
                requestStart = nextRequestStart
                nextRequestStart = nil
                timer?.cancel()
                timer = nil  // inside the input callback, not the timer's
            case .rejected(let r):
                listener.countHeadRejection()
                if r.reason == .methodNotAllowed {
                    reject(APIError(.methodNotAllowed, "the relay serves no resource with this method"),
                           allow: Self.servedMethods, input: input)
                } else {
                    reject(r.error, allow: r.allow, input: input)
                }
                return
            }
        }
        // `pending`: a request is in progress (its deadline runs). Empty lines that came after
        // a request (RFC 9112 §2.2) keep the framer and are held, but start no deadline: a
        // client that ends its body with an extra CRLF and then reads a long stream must not
        // be cut at `RELAY_REQUEST_TIMEOUT`.
        let idle = framer.value.isIdle
        let pending = framer.value.requestStarted
        if idle { self.framer = nil }
        if pending, timer?.isScheduled != true { scheduleTimer(afterMs: timeoutMs, frees: false) }
        if pending != isPending {
            // evhttp's read-idle timeout (`RELAY_REQUEST_TIMEOUT`, from the last read) would
            // otherwise race the gate's deadline (from the first byte) and close without the
            // 408 when the last read was the first (a head alone, or a part of one): while a
            // request is in progress it is set past the deadline, and back to the idle
            // keep-alive timeout once the request is whole.
            setReadTimeout(ms: pending ? timeoutMs + Self.readTimeoutMarginMs : timeoutMs)
            isPending = pending
            if !listener.pendingChanged(by: pending ? 1 : -1) {
                reject(APIError(.tooManyPendingRequests,
                                "too many connections are still sending their request; retry shortly"), allow: nil, input: input)
                return
            }
        }
        if !idle && !inBody {
            // A head is still incomplete: nothing of it reaches evhttp yet. Its bytes (the last
            // `pendingRequestBytes` fed) move aside, in order; complete requests that came before
            // them in the same read stay for evhttp (a POST whose body ends with an extra CRLF,
            // or is followed by the first bytes of a pipelined request). Once some are held, the
            // input holds only later bytes of the same head.
            if let h = held {
                evbuffer_add_buffer(h, input)
            } else {
                let h = evbuffer_new()!
                held = h
                let length = evbuffer_get_length(input)
                let keep = length - min(length, framer.value.pendingRequestBytes)
                if keep == 0 {
                    evbuffer_add_buffer(h, input)
                } else {
                    let front = evbuffer_new()
                    evbuffer_remove_buffer(input, front, keep)
                    evbuffer_add_buffer(h, input)
                    reinserting = true
                    evbuffer_prepend_buffer(input, front)
                    reinserting = false
                    evbuffer_free(front)
                }
            }
        } else {
            reinsertHeld(into: input)
        }
    }

    /// Puts the held bytes back in front of the input (they came before it).
    private func reinsertHeld(into input: OpaquePointer) {
        guard let h = held else { return }
        held = nil
        reinserting = true
        evbuffer_prepend_buffer(input, h)
        reinserting = false
        evbuffer_free(h)
    }

    private func deadlinePassed() {
        guard !isRejected, let framer, framer.value.requestStarted else { return }
        listener.countDeadlineCut()
        reject(APIError(.requestTimeout, "the request was not received within \(timeoutMs / 1000) s of its first byte"),
               allow: nil, input: bufferevent_get_input(bufferevent))
    }

    /// Answers `error` on the socket, closes, and has evhttp drop the connection.
    private func reject(_ error: APIError, allow: String?, input: OpaquePointer?) {
        isRejected = true
        framer = nil
        timer?.cancel()
        if isPending {
            isPending = false
            _ = listener.pendingChanged(by: -1)
        }
        if let input { evbuffer_drain(input, evbuffer_get_length(input)) }
        if let h = held {
            held = nil
            evbuffer_free(h)
        }
        let fd = Int32(bufferevent_getfd(bufferevent))
        if fd >= 0 {
            // Only when every earlier request was answered and nothing of its response is
            // still queued: the answer must not land in the middle of another response (a
            // pipelined request behind a stream, even between two of its events).
            if unansweredRequests == 0, let out = bufferevent_get_output(bufferevent), evbuffer_get_length(out) == 0 {
                var head = "HTTP/1.1 \(error.status) \(HTTPExchange.reason(error.status))\r\n"
                    + "Content-Type: application/json\r\nCache-Control: no-store\r\nConnection: close\r\n"
                if let allow { head += "Allow: \(allow)\r\n" }
                if RetryAfter.applies(status: error.status, code: error.code) {
                    var random = SystemRandomNumberGenerator()
                    head += "Retry-After: \(RetryAfter.overload.headerValue(using: &random))\r\n"
                }
                let body = error.body
                head += "Content-Length: \(body.utf8.count)\r\n\r\n" + body
                var bytes = Array(head.utf8)
                _ = bytes.withUnsafeMutableBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
            shutdown(fd, Int32(SHUT_WR))
            listener.linger(fd: fd)
        }
        scheduleTimer(afterMs: 0, frees: true)
    }

    /// The reset of `closeWithin(ms:)`; made when first needed.
    private var closeTimer: LoopTimer?
    private var closed = false

    /// Resets the connection (`SO_LINGER` 0, then evhttp frees it) unless evhttp has closed
    /// it within `ms`: the bound on a response that was ended and is waiting to be written to
    /// a client that does not read (`HTTPExchange.abort`).
    public func closeWithin(ms: UInt64) {
        guard !closed else { return }
        if closeTimer == nil {
            closeTimer = LoopTimer(loop: loop) { [unowned self] in
                guard !closed else { return }
                let fd = Int32(bufferevent_getfd(bufferevent))
                if fd >= 0 {
                    var lg = linger(l_onoff: 1, l_linger: 0)
                    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, socklen_t(MemoryLayout<linger>.size))
                }
                freeConnection()
            }
        }
        closeTimer?.schedule(afterMs: ms)
    }

    /// Whether a response ended by `HTTPExchange.abort` is still being written (the
    /// `closeWithin` bound is running).
    public var isClosing: Bool { !closed && closeTimer?.isScheduled == true }

    private func freeConnection() {
        evhttp_connection_free(connection)  // calls connectionClosed() through the close callback
    }

    /// evhttp is freeing the connection.
    public func connectionClosed() {
        closed = true
        timer?.cancel()
        closeTimer?.cancel()
        if isPending {
            isPending = false
            _ = listener.pendingChanged(by: -1)
        }
        let cb = onClose
        onClose = nil
        cb?()
    }
}

/// A request's `RequestFramer` on the heap, held by a `ConnectionGate` only while that request
/// is in progress (the framer is several hundred bytes inline).
private final class FramerBox {
    public var value: RequestFramer
    public init(limits: RequestHeadValidator.Limits) { value = RequestFramer(limits: limits) }
}
