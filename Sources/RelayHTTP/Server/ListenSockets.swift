import Foundation

/// The listening sockets of one instance: one per worker, all bound to the same
/// address with `SO_REUSEPORT`, so the kernel spreads new connections over the
/// workers (socket(7)). Port 0 binds an ephemeral port once and reuses it.
public enum ListenSockets {
    /// `SO_SNDBUF` of client connections (set on the listening sockets; accepted
    /// sockets inherit it). Left alone, Linux autotunes a connection's send buffer up
    /// to `tcp_wmem` max (4 MiB): a client that reads slowly then parks megabytes in
    /// the kernel before any byte waits in the relay's own buffer, so
    /// `RELAY_MAX_PENDING_BYTES` would only trigger after that. 64 KiB (the kernel
    /// doubles it for bookkeeping) is far above what an event stream needs per
    /// round trip, and bounds a slow client's unsent output to about
    /// 128 KiB + `RELAY_MAX_PENDING_BYTES`.
    public static let clientSendBufferBytes: Int32 = 64 * 1024

    /// - Returns: the file descriptors and the bound port.
    /// - Throws: `ListenError` naming the address and `errno` text.
    public static func open(host: String, port: Int, count: Int) throws -> (fds: [Int32], port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0, let ai = res else {
            throw ListenError("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(res) }
        if port != 0 { try ensureFree(ai, host: host, port: port) }
        var fds: [Int32] = []
        var boundPort = port
        do {
            for _ in 0..<count {
                let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype, ai.pointee.ai_protocol)
                guard fd >= 0 else { throw ListenError("socket: \(String(cString: strerror(errno)))") }
                fds.append(fd)
                var one: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
                setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
                var sndbuf = clientSendBufferBytes
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, socklen_t(MemoryLayout<Int32>.size))
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                var addr = sockaddr_storage()
                memcpy(&addr, ai.pointee.ai_addr, Int(ai.pointee.ai_addrlen))
                setPort(&addr, boundPort)
                let b = withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, ai.pointee.ai_addrlen) }
                }
                guard b == 0 else { throw ListenError("cannot bind \(host):\(boundPort): \(String(cString: strerror(errno)))") }
                guard listen(fd, 1024) == 0 else { throw ListenError("listen: \(String(cString: strerror(errno)))") }
                if boundPort == 0 { boundPort = localPort(fd) }
            }
        } catch {
            for fd in fds { close(fd) }
            throw error
        }
        return (fds, boundPort)
    }

    /// `SO_REUSEPORT` would let a second relay (or anything else) silently share the
    /// port with the first, splitting its connections; so the address is first bound
    /// once without it, which fails with `EADDRINUSE` when someone listens there.
    private static func ensureFree(_ ai: UnsafeMutablePointer<addrinfo>, host: String, port: Int) throws {
        let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype, ai.pointee.ai_protocol)
        guard fd >= 0 else { throw ListenError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let b = bind(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen)
        guard b == 0 else {
            throw ListenError("cannot bind \(host):\(port): \(String(cString: strerror(errno))) (is another relay already listening there?)")
        }
    }

    private static func setPort(_ addr: inout sockaddr_storage, _ port: Int) {
        withUnsafeMutablePointer(to: &addr) { p in
            if p.pointee.ss_family == sa_family_t(AF_INET) {
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = in_port_t(UInt16(port).bigEndian) }
            } else {
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = in_port_t(UInt16(port).bigEndian) }
            }
        }
    }

    private static func localPort(_ fd: Int32) -> Int {
        var addr = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return withUnsafePointer(to: &addr) { p in
            if p.pointee.ss_family == sa_family_t(AF_INET) {
                return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
            return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        }
    }
}

/// A listening socket could not be opened.
public struct ListenError: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}
