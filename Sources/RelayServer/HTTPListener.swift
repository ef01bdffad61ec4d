import CLibevent
import Glibc
import Synchronization
import RelayCore
import RelayHTTP
import RelayLoop
import RelayConfiguration

/// The worker's HTTP/1.1 listener (docs/ARCHITECTURE.md): one `evhttp` on the worker's loop,
/// accepting on the worker's `SO_REUSEPORT` socket, handing every request to
/// `handler` as an `HTTPExchange`. Owns the `evhttp` handle; loop thread only.
///
/// Connection-level policy lives here (docs/PROTOCOL.md §12):
/// * every connection's bytes pass a `ConnectionGate` (strict RFC 9112 framing, the relay's
///   JSON errors, the whole-request deadline `RELAY_REQUEST_TIMEOUT`) before evhttp parses them;
/// * at most `RELAY_MAX_PENDING_REQUESTS` connections of this worker may be part-way through
///   sending a request; the next one is answered `503 too_many_pending_requests`;
/// * file descriptors (docs/OPERATIONS.md "File descriptors"): when a new connection's
///   descriptor is within the reserve of the `RLIMIT_NOFILE` soft limit, or `accept()` fails
///   with `EMFILE`/`ENFILE`, the oldest connection that has not completed its first request
///   head is closed (`ConnectionShedding`, `relay_connections_shed_total`), so health probes,
///   Redis and upstream connections still get descriptors; live streams are never shed;
/// * when `accept()` fails and there is nothing to shed, the listening socket is paused with
///   `AcceptBackoff` instead of spinning, logged at most once a second with a count, and
///   counted in `relay_accept_errors_total`.
final class HTTPListener: ConnectionGateHost {
    private var http: OpaquePointer?
    private var boundSocket: OpaquePointer?
    private let handler: (HTTPExchange) -> Void
    private let loop: EventLoop
    private let metrics: Metrics
    private let limits: RequestHeadValidator.Limits
    private let requestTimeoutMs: Int
    private let maxPendingRequests: Int
    private var pendingRequests = 0
    private var gates: [UInt: ConnectionGate] = [:]
    /// Connections that may be shed, by gate serial → evhttp connection key (`gates`).
    private var shedding = ConnectionShedding()
    private var shedCandidates: [UInt64: UInt] = [:]
    private var nextSerial: UInt64 = 0
    private var lastShedLogMs: UInt64?
    private var unloggedSheds = 0
    private var lingering: [Int32: LingeringClose] = [:]
    private var backoff = AcceptBackoff()
    private var resumeTimer: LoopTimer?
    private var acceptPaused = false

    /// Listeners by their `evhttp` handle, for the C callbacks that only get that handle.
    private static let registry = Mutex<[UInt: UInt]>([:])

    /// - Parameters:
    ///   - listenFD: a bound, listening, non-blocking socket (one per worker, `SO_REUSEPORT`).
    ///   - handler: called on the loop thread for every complete request.
    /// - Throws: `LoopError.cannotCreate` when `evhttp` cannot be created or bound.
    init(loop: EventLoop, config: RelayConfig, metrics: Metrics, listenFD: Int32,
         handler: @escaping (HTTPExchange) -> Void) throws {
        self.handler = handler
        self.loop = loop
        self.metrics = metrics
        requestTimeoutMs = config.requestTimeoutMs
        maxPendingRequests = config.maxPendingRequests
        var l = RequestHeadValidator.Limits()
        l.maxHeadBytes = 160 * 1024  // room for a 100 KB bogus token to reach the 401 path
        l.maxFieldLines = 200
        l.maxBodyBytes = config.maxBodyBytes
        // PUT, PATCH and OPTIONS pass to routing, which answers 405 with the path's own
        // `Allow` (RFC 9110 §15.5.6); any other method gets the gate's 405.
        l.allowedMethods = ["GET", "HEAD", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"]
        limits = l
        guard let h = evhttp_new(loop.base) else { throw LoopError.cannotCreate }
        http = h
        // The gate admits only these; evhttp's own list is the same, as a second line.
        let methods = EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_DELETE.rawValue
            | EVHTTP_REQ_HEAD.rawValue | EVHTTP_REQ_PUT.rawValue | EVHTTP_REQ_OPTIONS.rawValue | EVHTTP_REQ_PATCH.rawValue
        evhttp_set_allowed_methods(h, UInt16(methods))
        evhttp_set_max_body_size(h, Int(config.maxBodyBytes))
        evhttp_set_max_headers_size(h, 160 * 1024 + 1024)
        // evhttp's own timeout is a read-idle timeout: it closes idle keep-alive connections.
        // The whole-request deadline is the gate's.
        evhttp_set_timeout(h, Int32(max(1, config.requestTimeoutMs / 1000)))
        let me = Unmanaged.passUnretained(self).toOpaque()
        evhttp_set_gencb(h, { req, arg in
            guard let req, let arg else { return }
            Unmanaged<HTTPListener>.fromOpaque(arg).takeUnretainedValue().request(req)
        }, me)
        evhttp_set_bevcb(h, { base, arg in
            Unmanaged<HTTPListener>.fromOpaque(arg!).takeUnretainedValue().newBufferevent(base)
        }, me)
        Self.registry.withLock { $0[UInt(bitPattern: h)] = UInt(bitPattern: me) }
        guard let bound = evhttp_accept_socket_with_handle(h, listenFD) else { throw LoopError.cannotCreate }
        boundSocket = bound
        if let lev = evhttp_bound_socket_get_listener(bound) {
            evconnlistener_set_error_cb(lev) { lev, ctx in
                guard let lev, let listener = HTTPListener.lookup(ctx.map { OpaquePointer($0) }) else { return }
                listener.acceptFailed(lev)
            }
        }
    }

    deinit { close() }

    private static func lookup(_ http: OpaquePointer?) -> HTTPListener? {
        guard let http, let p = registry.withLock({ $0[UInt(bitPattern: http)] }),
              let raw = UnsafeMutableRawPointer(bitPattern: p) else { return nil }
        return Unmanaged<HTTPListener>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: requests

    private func request(_ req: OpaquePointer) {
        let ex = HTTPExchange(req)
        if let con = evhttp_request_get_connection(req) { ex.gate = gates[UInt(bitPattern: con)] }
        handler(ex)
    }

    /// `evhttp_set_bevcb`: the bufferevent of a newly accepted connection (evhttp sets its fd).
    private func newBufferevent(_ base: OpaquePointer?) -> OpaquePointer? {
        backoff.succeeded()
        guard let bev = bufferevent_socket_new(base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else { return nil }
        evbuffer_add_cb(bufferevent_get_input(bev), HTTPListener.firstBytes, UnsafeMutableRawPointer(bev))
        return bev
    }

    /// The connection's first inbound bytes: make its gate, which takes over the callback.
    private static let firstBytes: evbuffer_cb_func = { input, info, arg in
        guard let input, let info, info.pointee.n_added > 0, let arg else { return }
        let bev = OpaquePointer(arg)
        var cbarg: UnsafeMutableRawPointer?
        bufferevent_getcb(bev, nil, nil, nil, &cbarg)
        guard let cbarg else { return }
        let con = OpaquePointer(cbarg)  // evhttp's evhttp_connection
        guard let listener = lookup(evhttp_connection_get_server(con)) else { return }
        evbuffer_remove_cb(input, firstBytes, arg)
        let gate = listener.makeGate(connection: con, bufferevent: bev)
        let gp = Unmanaged.passUnretained(gate).toOpaque()
        evbuffer_add_cb(input, gateBytes, gp)
        gate.inputGrew(input, added: Int(info.pointee.n_added))
    }

    private static let gateBytes: evbuffer_cb_func = { input, info, arg in
        guard let input, let info, info.pointee.n_added > 0, let arg else { return }
        Unmanaged<ConnectionGate>.fromOpaque(arg).takeUnretainedValue().inputGrew(input, added: Int(info.pointee.n_added))
    }

    private func makeGate(connection con: OpaquePointer, bufferevent bev: OpaquePointer) -> ConnectionGate {
        nextSerial += 1
        let gate = ConnectionGate(listener: self, loop: loop, connection: con, bufferevent: bev,
                                  limits: limits, timeoutMs: requestTimeoutMs, serial: nextSerial)
        let fd = Int(bufferevent_getfd(bev))
        if fd >= 0, let victim = shedding.admitted(descriptor: fd, limit: Self.descriptorLimit()) {
            shed(victim, why: "descriptor reserve")
        }
        gates[UInt(bitPattern: con)] = gate
        shedding.awaitingHead(gate.serial)
        shedCandidates[gate.serial] = UInt(bitPattern: con)
        evhttp_connection_set_closecb(con, { con, arg in
            guard let con, let arg else { return }
            Unmanaged<HTTPListener>.fromOpaque(arg).takeUnretainedValue().connectionClosed(con)
        }, Unmanaged.passUnretained(self).toOpaque())
        return gate
    }

    private func connectionClosed(_ con: OpaquePointer) {
        guard let gate = gates.removeValue(forKey: UInt(bitPattern: con)) else { return }
        if shedCandidates.removeValue(forKey: gate.serial) != nil { shedding.leftCandidates(gate.serial) }
        evbuffer_remove_cb(bufferevent_get_input(gate.bufferevent), HTTPListener.gateBytes,
                           Unmanaged.passUnretained(gate).toOpaque())
        gate.connectionClosed()
    }

    /// A gate's connection started (+1) or finished (-1) sending a request. Returns `false`
    /// when this start is over `RELAY_MAX_PENDING_REQUESTS` (the gate then refuses it).
    func pendingChanged(by delta: Int) -> Bool {
        pendingRequests += delta
        if delta > 0, pendingRequests > maxPendingRequests {
            metrics.add(.pendingRequestRefusals)
            return false
        }
        return true
    }

    func firstHeadArrived(_ gate: ConnectionGate) {
        if shedCandidates.removeValue(forKey: gate.serial) != nil { shedding.leftCandidates(gate.serial) }
    }

    /// The soft `RLIMIT_NOFILE` (read each time: an operator may change it with prlimit(1)
    /// while the relay runs); 0 when unknown or unlimited.
    private static func descriptorLimit() -> Int {
        var r = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r) == 0, r.rlim_cur < UInt(Int32.max) else { return 0 }
        return Int(r.rlim_cur)
    }

    /// Closes connection `serial` (it has not completed its first request head) to free its
    /// descriptor; no answer is written (its request is not there to answer).
    private func shed(_ serial: UInt64, why: String) {
        guard let key = shedCandidates.removeValue(forKey: serial), let gate = gates[key] else { return }
        metrics.add(.connectionsShed)
        unloggedSheds += 1
        let now = loop.nowMs
        if lastShedLogMs.map({ now >= $0 + 1_000 }) ?? true {
            Log.warn("closing connections that have not sent a request head, to keep file descriptors free",
                     ["reason": why, "closed": unloggedSheds])
            lastShedLogMs = now
            unloggedSheds = 0
        }
        evhttp_connection_free(gate.connection)  // connectionClosed() through the close callback
    }

    func countHeadRejection() { metrics.add(.requestHeadRejections) }
    func countDeadlineCut() { metrics.add(.requestDeadlineCuts) }

    /// Keeps a dup of a rejected connection's socket open briefly, reading and discarding, so
    /// the JSON answer already sent is not destroyed by a reset (RFC 9112 §9.6).
    func linger(fd: Int32) {
        let d = dup(fd)
        guard d >= 0 else { return }
        let l = LingeringClose(loop: loop, fd: d) { [weak self] fd in self?.lingering[fd] = nil }
        lingering[d] = l
    }

    // MARK: accept failures

    private func acceptFailed(_ lev: OpaquePointer) {
        let err = errno
        metrics.add(.acceptErrors)
        if err == EMFILE || err == ENFILE, let victim = shedding.acceptFailed() {
            // One descriptor freed: the listener stays enabled, and the next loop turn's
            // accept() takes the waiting connection (a health probe among them).
            shed(victim, why: String(cString: strerror(err)))
            return
        }
        evconnlistener_disable(lev)
        acceptPaused = true
        let d = backoff.failed(nowMs: loop.nowMs)
        if let n = d.logCount {
            Log.warn("accept() failed; pausing the listener", ["error": String(cString: strerror(err)),
                                                               "failures": n, "pause_ms": Int(d.pauseMs)])
        }
        if resumeTimer == nil {
            resumeTimer = LoopTimer(loop: loop) { [weak self] in self?.resumeAccepting() }
        }
        resumeTimer?.schedule(afterMs: d.pauseMs)
    }

    private func resumeAccepting() {
        guard acceptPaused, let b = boundSocket, let lev = evhttp_bound_socket_get_listener(b) else { return }
        acceptPaused = false
        evconnlistener_enable(lev)
    }

    /// Stops accepting new connections (drain); open ones keep working.
    /// Connections whose response was ended by `HTTPExchange.abort` and that are still
    /// writing it (each closes or is reset within `HTTPExchange.abortGraceMs`).
    var closingConnections: Int { gates.values.reduce(0) { $0 + ($1.isClosing ? 1 : 0) } }

    func stopAccepting() {
        resumeTimer?.cancel()
        if let h = http, let b = boundSocket {
            boundSocket = nil
            evhttp_del_accept_socket(h, b)
        }
    }

    /// Frees the listener and every connection it holds.
    func close() {
        resumeTimer?.cancel()
        if let h = http {
            http = nil
            boundSocket = nil
            evhttp_free(h)
            Self.registry.withLock { $0[UInt(bitPattern: h)] = nil }
        }
        lingering.removeAll()
    }
}
