import CLibevent
import Foundation
import RelayCore
import RelayHTTP
import RelayLoop

/// Wall-clock microseconds (CLOCK_REALTIME), the clock the producers embed.
@inline(__always)
func nowMicros() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec) / 1_000
}

/// Raises RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit.
func raiseOpenFileLimit() -> Int {
    var rl = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return -1 }
    if rl.rlim_cur < rl.rlim_max {
        rl.rlim_cur = rl.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl)
    }
    return Int(rl.rlim_cur)
}

/// Local source addresses 127.0.0.1 … 127.0.0.k used round-robin, so that more than
/// one ephemeral port range (~28k ports per source/destination pair) is available.
final class SourceAddresses {
    let count: Int
    private var next = 0
    private(set) var failures = 0

    /// `count`: addresses to use; 0 = as many as `connections` needs (20k per address).
    init(count: Int, connections: Int) {
        self.count = count > 0 ? count : max(1, (connections + 19_999) / 20_000)
    }

    var description: String { count == 1 ? "127.0.0.1" : "127.0.0.1-127.0.0.\(count)" }

    /// The next source address (network order).
    func take() -> in_addr_t {
        let i = next % count
        next += 1
        return in_addr_t(UInt32(0x7F00_0001 + i).bigEndian)
    }
}

/// One HTTP/1.1 client connection on a libevent bufferevent, for the load generator.
///
/// Sends a request, parses the response head, then decodes the body (chunked,
/// Content-Length or close-delimited) and hands body bytes to `onBody` as they
/// arrive (zero-copy: the segments of the input evbuffer). Keep-alive: after a
/// response with a known length ends, `onResponseEnd` runs and another request may be
/// sent on the same connection. Loop thread only.
final class HTTPConnection {
    enum Framing { case chunked, length(Int), close }
    private enum BodyState { case head, chunked(ChunkedBodyDecoder), lengthData(Int), closeData, done }

    private(set) var bev: OpaquePointer?
    private var state: BodyState = .head
    private(set) var status = 0
    private(set) var closed = false
    private var selfRef: Unmanaged<HTTPConnection>?

    /// Response head received: status code, raw head text.
    var onHead: ((Int, String) -> Void)?
    /// Body bytes (already de-chunked).
    var onBody: ((UnsafeRawBufferPointer) -> Void)?
    /// A response with a known end (last chunk / Content-Length) is complete.
    var onResponseEnd: (() -> Void)?
    /// The connection is gone: `error` is nil after a clean EOF.
    var onClose: ((String?) -> Void)?
    /// Every byte read from the socket so far (response head, chunk framing and body):
    /// the bytes on the wire of a slow link (`slow-link`).
    private(set) var bytesReceived = 0
    /// Input bytes already counted in `bytesReceived` but not yet consumed.
    private var counted = 0
    /// The read rate limit (`throttle`), owned until `close`.
    private var rateLimit: OpaquePointer?

    /// Connects to `dst` from `src` (port chosen by the kernel at connect time).
    /// `receiveBuffer`: `SO_RCVBUF` in bytes, set before the connect so the TCP window
    /// stays that small (a slow link's reader, `slow-link`); nil leaves the kernel's default.
    init?(loop: EventLoop, src: in_addr_t, dst: sockaddr_in, receiveBuffer: Int? = nil) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        if var rcv = receiveBuffer.map(Int32.init) {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, socklen_t(MemoryLayout<Int32>.size))
        }
        var one: Int32 = 1
        // IP_BIND_ADDRESS_NO_PORT (24): let connect() pick the port per 4-tuple.
        _ = setsockopt(fd, Int32(IPPROTO_IP), 24, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = src
        let brc = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard brc == 0, let b = bufferevent_socket_new(loop.base, fd, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            Glibc.close(fd)
            return nil
        }
        bev = b
        let me = Unmanaged.passRetained(self)
        selfRef = me
        bufferevent_setcb(b, { _, ctx in
            Unmanaged<HTTPConnection>.fromOpaque(ctx!).takeUnretainedValue().readable()
        }, nil, { _, what, ctx in
            Unmanaged<HTTPConnection>.fromOpaque(ctx!).takeUnretainedValue().event(what)
        }, me.toOpaque())
        _ = bufferevent_enable(b, Int16(EV_READ | EV_WRITE))
        var d = dst
        let rc = withUnsafeMutablePointer(to: &d) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bufferevent_socket_connect(b, $0, Int32(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            bufferevent_free(b)
            bev = nil
            selfRef?.release()
            selfRef = nil
            return nil
        }
    }

    /// Queues request bytes (written once connected).
    func send(_ text: String) {
        guard let bev else { return }
        var t = text
        t.withUTF8 { p in _ = bufferevent_write(bev, p.baseAddress, p.count) }
    }

    /// Reads at most `bytesPerSecond`, refilled every `tickMs` with a burst of five ticks
    /// (libevent's token-bucket rate limit, `bufferevent_set_rate_limit`): what is not
    /// read stays in the kernel's receive buffer and, once that is full, backs up the
    /// sender, as on a GPRS/EDGE-class link.
    func throttle(bytesPerSecond: Int, tickMs: Int = 20) {
        guard let bev, rateLimit == nil else { return }
        let perTick = max(1, bytesPerSecond * tickMs / 1000)
        var tick = timeval(tv_sec: tickMs / 1000, tv_usec: (tickMs % 1000) * 1000)
        guard let cfg = ev_token_bucket_cfg_new(perTick, perTick * 5, Int(Int32.max), Int(Int32.max), &tick) else { return }
        rateLimit = cfg
        _ = bufferevent_set_rate_limit(bev, cfg)
    }

    /// Queues raw bytes.
    func send(bytes: UnsafeRawBufferPointer) {
        guard let bev else { return }
        _ = bufferevent_write(bev, bytes.baseAddress, bytes.count)
    }

    /// Resets the parser for the next response on a keep-alive connection.
    func expectResponse() { state = .head }

    /// Bytes written but not yet sent.
    var pendingOutput: Int {
        guard let bev, let out = bufferevent_get_output(bev) else { return 0 }
        return evbuffer_get_length(out)
    }

    /// Closes at once (no callback).
    func close() {
        guard !closed else { return }
        closed = true
        if let b = bev {
            bev = nil
            // The bufferevent refers to its rate limit's configuration: detach it first.
            if rateLimit != nil { _ = bufferevent_set_rate_limit(b, nil) }
            bufferevent_free(b)
        }
        if let cfg = rateLimit {
            rateLimit = nil
            ev_token_bucket_cfg_free(cfg)
        }
        onHead = nil
        onBody = nil
        onResponseEnd = nil
        onClose = nil
        if let r = selfRef {
            selfRef = nil
            r.release()
        }
    }

    private func finish(_ error: String?) {
        guard !closed else { return }
        let cb = onClose
        close()
        cb?(error)
    }

    private func event(_ what: Int16) {
        if what & Int16(BEV_EVENT_CONNECTED) != 0 { return }
        if what & Int16(BEV_EVENT_EOF) != 0 {
            if case .closeData = state { state = .done }
            let clean: Bool
            switch state {
            case .done: clean = true
            case .head where status != 0: clean = true
            default: clean = false
            }
            return finish(clean ? nil : "eof before the response ended")
        }
        if what & Int16(BEV_EVENT_ERROR) != 0 {
            let e = errno
            return finish(String(cString: strerror(e)))
        }
    }

    private func readable() {
        guard let bev, let input = bufferevent_get_input(bev) else { return }
        bytesReceived += evbuffer_get_length(input) - counted
        defer { counted = closed ? 0 : evbuffer_get_length(input) }
        while !closed {
            let avail = evbuffer_get_length(input)
            switch state {
            case .head:
                guard avail > 0 else { return }
                let p = evbuffer_search(input, "\r\n\r\n", 4, nil)
                guard p.pos >= 0 else {
                    if avail > 65536 { return finish("response head too large") }
                    return
                }
                let n = p.pos + 4
                let head: String = {
                    let raw = evbuffer_pullup(input, n)!
                    return String(decoding: UnsafeBufferPointer(start: raw, count: n), as: UTF8.self)
                }()
                evbuffer_drain(input, n)
                parseHead(head)
                if closed { return }
            case .chunked(var decoder):
                // Size and trailer lines are read from a contiguous window; data is
                // delivered zero-copy from the evbuffer's segments.
                let window = decoder.needsWindow ? min(avail, ChunkedBodyDecoder.maxLineBytes + 2) : 0
                let raw = window > 0 ? evbuffer_pullup(input, window) : nil
                let step = decoder.next(UnsafeRawBufferPointer(start: raw, count: raw == nil ? 0 : window), available: avail)
                state = .chunked(decoder)
                switch step {
                case .needMore:
                    return
                case .skip(let n):
                    evbuffer_drain(input, n)
                case .data(let n):
                    deliver(input, n)
                    if closed { return }
                case .end(let n):
                    evbuffer_drain(input, n)
                    state = .done
                    onResponseEnd?()
                    if case .done = state { return }
                case .malformed(let why):
                    return finish(why)
                }
            case .lengthData(let remaining):
                if remaining == 0 {
                    state = .done
                    onResponseEnd?()
                    if case .done = state { return }
                    continue
                }
                guard avail > 0 else { return }
                let n = min(remaining, avail)
                deliver(input, n)
                if closed { return }
                state = .lengthData(remaining - n)
            case .closeData:
                guard avail > 0 else { return }
                deliver(input, avail)
                return
            case .done:
                if avail > 0 { evbuffer_drain(input, avail) }
                return
            }
        }
    }

    private func deliver(_ input: OpaquePointer, _ n: Int) {
        var vecs = [iovec](repeating: iovec(), count: 8)
        var left = n
        while left > 0 && !closed {
            let k = Int(evbuffer_peek(input, left, nil, &vecs, 8))
            var used = 0
            for i in 0..<min(k, 8) where left > 0 {
                let len = min(vecs[i].iov_len, left)
                onBody?(UnsafeRawBufferPointer(start: vecs[i].iov_base, count: len))
                used += len
                left -= len
            }
            evbuffer_drain(input, used)
            if used == 0 { break }
        }
    }

    private func parseHead(_ head: String) {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: true)
        guard let first = lines.first else { return finish("empty response head") }
        let parts = first.split(separator: " ")
        guard parts.count >= 2, let s = Int(parts[1]) else { return finish("bad status line") }
        status = s
        var framing = Framing.close
        for l in lines.dropFirst() {
            guard let c = l.firstIndex(of: ":") else { continue }
            let k = l[..<c].lowercased()
            let v = l[l.index(after: c)...].trimmingCharacters(in: .whitespaces)
            if k == "transfer-encoding", v.lowercased().contains("chunked") { framing = .chunked }
            if k == "content-length", case .close = framing, let n = Int(v) { framing = .length(n) }
        }
        switch framing {
        case .chunked: state = .chunked(ChunkedBodyDecoder())
        case .length(let n): state = .lengthData(n)
        case .close: state = .closeData
        }
        onHead?(s, head)
    }
}
