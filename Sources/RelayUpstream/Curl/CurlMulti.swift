import CCurl
import CLibevent
import RelayLoop

/// One libcurl multi handle (`CURLM *`) driven by a worker's libevent loop: the worker's
/// single place for outbound HTTP(S). One per worker, confined to the loop's thread.
///
/// libcurl's socket interface (`curl_multi_socket_action`, see libcurl's
/// "multi-event.c"/"hisocket" examples): libcurl tells which sockets to watch
/// (`CURLMOPT_SOCKETFUNCTION`) and when to wake it (`CURLMOPT_TIMERFUNCTION`); this type keeps
/// one persistent libevent `event` per socket on `loop.base` and one `LoopTimer`, calls
/// `curl_multi_socket_action` when they fire, then reads finished transfers with
/// `curl_multi_info_read` and hands each its result.
///
/// Connections are cached per multi handle, so successive transfers of one worker to the
/// same upstream reuse a kept-alive connection (TLS handshake included).
///
/// Removing a transfer is never done inside a libcurl callback (libcurl forbids it): while
/// `curl_multi_socket_action` runs, `UpstreamTransfer.abort()` only marks the transfer, its
/// write callback refuses further bytes, and the handle is removed as soon as the call
/// returns, still before control goes back to the loop.
public final class CurlMulti {
    /// The loop this multi handle runs on.
    public let loop: EventLoop
    let handle: UnsafeMutableRawPointer
    private var timer: LoopTimer?
    /// Watched sockets: fd → its libevent event.
    private var sockets: [curl_socket_t: OpaquePointer] = [:]
    /// Transfers added and not yet removed, by their easy handle. Holds them alive.
    private var attached: [UnsafeMutableRawPointer: UpstreamTransfer] = [:]
    /// Transfers aborted while libcurl was running; removed once it returns.
    private var pendingRemoval: [UpstreamTransfer] = []
    /// > 0 while inside `curl_multi_socket_action` (and so possibly inside a callback).
    private var dispatchDepth = 0

    /// Creates the multi handle and attaches it to `loop`. Call on the loop's thread.
    /// - Parameter maxConnectionsPerHost: `CURLMOPT_MAX_HOST_CONNECTIONS` (0: unlimited).
    /// - Throws: `CurlError` when libcurl cannot be initialised or allocate the handle.
    public init(loop: EventLoop, maxConnectionsPerHost: Int = 0) throws {
        try CurlGlobal.ensure()
        guard let m = curl_multi_init() else { throw CurlError.cannotCreate("curl multi handle") }
        self.loop = loop
        handle = m
        let me = Unmanaged.passUnretained(self).toOpaque()
        timer = LoopTimer(loop: loop) { [unowned self] in self.action(socket: CURL_SOCKET_TIMEOUT, flags: 0) }
        sr_multi_setopt_socket_callback(m) { _, fd, what, userp, _ in
            Unmanaged<CurlMulti>.fromOpaque(userp!).takeUnretainedValue().watch(fd: fd, what: what)
            return 0
        }
        sr_multi_setopt_pointer(m, CURLMOPT_SOCKETDATA, me)
        sr_multi_setopt_timer_callback(m) { _, timeoutMs, userp in
            Unmanaged<CurlMulti>.fromOpaque(userp!).takeUnretainedValue().setTimer(ms: timeoutMs)
            return 0
        }
        sr_multi_setopt_pointer(m, CURLMOPT_TIMERDATA, me)
        if maxConnectionsPerHost > 0 {
            sr_multi_setopt_long(m, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        }
    }

    deinit {
        // Transfers keep their multi alive while attached, so none is attached here.
        timer?.cancel()
        timer = nil
        // No callback into a half-destroyed object while libcurl closes cached connections.
        sr_multi_setopt_socket_callback(handle, nil)
        sr_multi_setopt_timer_callback(handle, nil)
        for (_, ev) in sockets { event_free(ev) }
        sockets.removeAll()
        curl_multi_cleanup(handle)
    }

    /// Number of transfers in progress (added, not finished or aborted).
    public var activeTransfers: Int { attached.count }

    /// Number of sockets libcurl currently asks the loop to watch.
    public var watchedSockets: Int { sockets.count }

    // MARK: transfers

    /// Adds `t`; libcurl starts it from the loop (its timer fires at once).
    /// - Throws: `CurlError.cannotCreate` when libcurl refuses the handle.
    func add(_ t: UpstreamTransfer) throws(CurlError) {
        attached[t.easy] = t
        let rc = curl_multi_add_handle(handle, t.easy)
        if rc != CURLM_OK {
            attached[t.easy] = nil
            throw .cannotCreate("transfer (curl_multi_add_handle: \(String(cString: curl_multi_strerror(rc))))")
        }
    }

    /// Removes `t` at once, or right after the running `curl_multi_socket_action` returns.
    func remove(_ t: UpstreamTransfer) {
        guard attached[t.easy] != nil else { return }
        if dispatchDepth > 0 {
            pendingRemoval.append(t)
        } else {
            detach(t)
        }
    }

    private func detach(_ t: UpstreamTransfer) {
        guard attached.removeValue(forKey: t.easy) != nil else { return }
        // An unfinished transfer's connection cannot be reused: libcurl closes it here.
        curl_multi_remove_handle(handle, t.easy)
    }

    // MARK: libcurl → loop

    /// CURLMOPT_SOCKETFUNCTION: start, change or stop watching `fd`.
    private func watch(fd: curl_socket_t, what: Int32) {
        if let old = sockets.removeValue(forKey: fd) {
            event_del(old)
            event_free(old)
        }
        if what == CURL_POLL_REMOVE { return }
        var flags = Int16(EV_PERSIST)
        if what & CURL_POLL_IN != 0 { flags |= Int16(EV_READ) }
        if what & CURL_POLL_OUT != 0 { flags |= Int16(EV_WRITE) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let ev = event_new(loop.base, fd, flags, { fd, events, arg in
            var f: Int32 = 0
            if events & Int16(EV_READ) != 0 { f |= CURL_CSELECT_IN }
            if events & Int16(EV_WRITE) != 0 { f |= CURL_CSELECT_OUT }
            Unmanaged<CurlMulti>.fromOpaque(arg!).takeUnretainedValue().action(socket: fd, flags: f)
        }, me) else { return }
        event_add(ev, nil)
        sockets[fd] = ev
    }

    /// CURLMOPT_TIMERFUNCTION: -1 deletes the timer; otherwise (re)arm it, 0 meaning "as soon
    /// as possible" (libcurl must not be re-entered from this callback, so even 0 goes
    /// through the loop).
    private func setTimer(ms: Int) {
        if ms < 0 {
            timer?.cancel()
        } else {
            timer?.schedule(afterMs: UInt64(ms))
        }
    }

    /// Lets libcurl act on `socket` (or on its timeouts), then settles finished transfers.
    private func action(socket: curl_socket_t, flags: Int32) {
        var running: Int32 = 0
        dispatchDepth += 1
        curl_multi_socket_action(handle, socket, flags, &running)
        dispatchDepth -= 1
        settle()
    }

    /// Reads `CURLMSG_DONE` messages and performs deferred removals.
    private func settle() {
        guard dispatchDepth == 0 else { return }
        var left: Int32 = 0
        while let msg = curl_multi_info_read(handle, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let code = sr_msg_result(msg)
            guard let t = attached[easy] else { continue }
            detach(t)
            t.didComplete(UpstreamTransfer.Completion(code: code, transfer: t))
        }
        while !pendingRemoval.isEmpty {
            let batch = pendingRemoval
            pendingRemoval.removeAll()
            for t in batch { detach(t) }
        }
    }
}
