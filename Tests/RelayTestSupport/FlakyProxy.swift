import Foundation
import RelayTestKit

/// A TCP proxy on 127.0.0.1 in front of a relay, for real network failures in
/// client tests: it forwards bytes both ways, and can cut a connection after a given
/// number of bytes from the relay (with a FIN or a RST), accept and close at once,
/// cut every open connection on demand, or stop listening (connection refused).
///
/// Each accepted connection is served by one thread polling both sockets, so no
/// socket is closed while another thread waits on it.
public final class FlakyProxy: @unchecked Sendable {
    /// What the proxy does with one accepted connection.
    public enum Behavior: Sendable, Equatable {
        /// Forward everything both ways until either side closes.
        case forward
        /// Forward the request; forward exactly `afterBytes` bytes of the response,
        /// then close both sides — with a RST when `reset`, else a FIN.
        case cut(afterBytes: Int, reset: Bool)
        /// Forward the request and the response head (status line and headers, up to
        /// the blank line), then close both sides before any body byte.
        case cutAfterHead(reset: Bool)
        /// Accept and close at once (RST when `reset`), before any byte is forwarded.
        case acceptAndClose(reset: Bool)
    }

    /// The port clients connect to.
    public let port: Int
    private let lock = NSLock()
    private var listenFD: Int32
    private var _upstreamPort: Int
    private var plan: @Sendable (Int) -> Behavior = { _ in .forward }
    private var accepted = 0
    private var cutEpoch = 0
    private var listening = true
    private var downstream: [Int: [UInt8]] = [:]
    private var acceptThread: Thread?

    /// Starts listening on an ephemeral port; connections go to `upstreamPort`.
    public init(upstreamPort: Int) throws {
        _upstreamPort = upstreamPort
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("proxy socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0, listen(fd, 64) == 0 else {
            Foundation.close(fd)
            throw TestFailure("proxy bind/listen: \(String(cString: strerror(errno)))")
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = Int(UInt16(bigEndian: bound.sin_port))
        listenFD = fd
        let t = Thread { [unowned self] in self.acceptLoop() }
        t.name = "FlakyProxy.accept"
        acceptThread = t
        t.start()
    }

    deinit { stop() }

    /// The relay port new connections are forwarded to.
    public var upstreamPort: Int {
        get { lock.withLock { _upstreamPort } }
        set { lock.withLock { _upstreamPort = newValue } }
    }

    /// Sets the behavior of each new connection by its index (0 for the first
    /// connection accepted since the proxy started).
    public func setPlan(_ p: @escaping @Sendable (Int) -> Behavior) { lock.withLock { plan = p } }

    /// Connections accepted so far.
    public var connectionCount: Int { lock.withLock { accepted } }

    /// The response bytes forwarded to the client on connection `index`.
    public func responseBytes(_ index: Int) -> [UInt8] { lock.withLock { downstream[index] ?? [] } }

    /// Cuts every open connection now (FIN on both sides).
    public func cutAll() { lock.withLock { cutEpoch += 1 } }

    /// Stops accepting: new connections are refused. Open connections keep going.
    public func stop() {
        lock.withLock { listening = false }
        // The accept loop polls with a timeout and closes the socket itself.
        pollUntil(timeout: 2, every: 0.002) { lock.withLock { listenFD < 0 } }
    }

    // MARK: - Accepting

    private func acceptLoop() {
        while true {
            let (fd, go) = lock.withLock { (listenFD, listening) }
            if !go {
                Foundation.close(fd)
                lock.withLock { listenFD = -1 }
                return
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 10) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            let (index, behavior, upstream, epoch) = lock.withLock { () -> (Int, Behavior, Int, Int) in
                let i = accepted
                accepted += 1
                downstream[i] = []
                return (i, plan(i), _upstreamPort, cutEpoch)
            }
            let t = Thread { [self] in self.serve(client: client, index: index, behavior: behavior, upstreamPort: upstream, epoch: epoch) }
            t.name = "FlakyProxy.link\(index)"
            t.start()
        }
    }

    // MARK: - One connection

    private static func setReset(_ fd: Int32) {
        var l = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
    }

    private static func connectTo(port: Int) -> Int32 {
        (try? LoopbackSocket.connect(port: port)) ?? -1
    }

    /// Sends all of `bytes`; false when the peer is gone.
    private static func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var off = bytes.startIndex
        while off < bytes.endIndex {
            let n = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }

    /// The length of an HTTP response head (through `\r\n\r\n`), once complete.
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    private func serve(client: Int32, index: Int, behavior: Behavior, upstreamPort: Int, epoch: Int) {
        if case .acceptAndClose(let reset) = behavior {
            if reset { Self.setReset(client) }
            Foundation.close(client)
            return
        }
        let upstream = Self.connectTo(port: upstreamPort)
        guard upstream >= 0 else {
            Foundation.close(client)
            return
        }
        var limit: Int? = nil
        var reset = false
        var headOnly = false
        switch behavior {
        case .cut(let n, let r): limit = n; reset = r
        case .cutAfterHead(let r): headOnly = true; reset = r
        case .forward, .acceptAndClose: break
        }
        var head: [UInt8] = []
        var forwarded = 0
        var buf = [UInt8](repeating: 0, count: 16_384)
        loop: while true {
            if lock.withLock({ cutEpoch != epoch }) { break }
            if let l = limit, forwarded >= l { break }
            var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, 10)
            if r <= 0 { continue }
            if fds[0].revents != 0 {   // request bytes: forward them all
                let n = buf.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break loop }
                if !Self.sendAll(upstream, buf[0..<n]) { break loop }
            }
            if fds[1].revents != 0 {   // response bytes: forward up to the limit
                let want = limit.map { min(buf.count, $0 - forwarded) } ?? buf.count
                var n = buf.withUnsafeMutableBytes { recv(upstream, $0.baseAddress, want, 0) }
                if n <= 0 { break loop }
                if headOnly && limit == nil {
                    head += buf[0..<n]
                    if let end = Self.headEnd(head) {
                        limit = end
                        n = end - forwarded
                    }
                }
                if !Self.sendAll(client, buf[0..<n]) { break loop }
                forwarded += n
                lock.withLock { downstream[index, default: []] += buf[0..<n] }
            }
        }
        if reset { Self.setReset(client) }
        Foundation.close(client)
        Foundation.close(upstream)
    }
}
