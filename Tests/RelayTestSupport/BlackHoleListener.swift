import Foundation
import RelayTestKit

/// A TCP listener on 127.0.0.1 whose accept queue is full (backlog 0, one completed
/// connection never accepted): further SYNs are dropped, so a connect to it never
/// completes (Linux `tcp_conn_request`: accept queue full). `open()` frees the queue.
public final class BlackHoleListener {
    /// The listening socket.
    public let listener: Int32
    /// Its port on 127.0.0.1.
    public let port: Int
    private var fillers: [Int32] = []

    /// - Throws: `TestFailure` when the listener cannot be made.
    public init() throws {
        (listener, port) = try LoopbackSocket.listen(backlog: 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let len = socklen_t(MemoryLayout<sockaddr_in>.size)
        for _ in 0..<3 {
            let f = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(f)
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(f, $0, len) } }
        }
        // The first filler's handshake completes (loopback: well under a millisecond) and
        // fills the accept queue; the others' SYNs are dropped from then on.
        let connected = pollUntil(timeout: 5, every: 0.001) { fillers.contains(where: Self.isConnected) }
        guard connected else { throw TestFailure("no connection to the black-hole listener completed") }
    }

    /// Whether the non-blocking connect of `fd` has completed (it has a peer).
    private static func isConnected(_ fd: Int32) -> Bool {
        var peer = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &len) }
        } == 0
    }

    /// Accepts (and closes) whatever waits: the next SYN completes again.
    public func open() {
        let flags = fcntl(listener, F_GETFL)
        _ = fcntl(listener, F_SETFL, flags | O_NONBLOCK)
        while true {
            let a = accept(listener, nil, nil)
            if a < 0 { break }
            close(a)
        }
    }

    deinit {
        for f in fillers { close(f) }
        close(listener)
    }
}
