import Foundation

/// TCP connections to 127.0.0.1 for the test clients and the proxy.
public enum LoopbackSocket {
    /// Connects to 127.0.0.1:`port`; `receiveBuffer` sets `SO_RCVBUF` before connecting
    /// (so the TCP window is small from the start). Returns the socket.
    /// - Throws: `TestFailure` naming the port and `errno` text when the connect fails.
    public static func connect(port: Int, receiveBuffer: Int? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = String(cString: strerror(errno))
            close(fd)
            throw TestFailure("connect to \(port) failed: \(e)")
        }
        return fd
    }
}

extension LoopbackSocket {
    /// A TCP listener on 127.0.0.1 at a port the kernel picks, with `listen(2)`'s
    /// `backlog`. Returns the socket and its port.
    /// - Throws: `TestFailure` with the `errno` text when `socket`, `bind` or `listen` fails.
    public static func listen(backlog: Int32) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Bool in
                bind(fd, p, len) == 0 && Foundation.listen(fd, backlog) == 0 && getsockname(fd, p, &len) == 0
            }
        }
        guard ok else {
            let e = String(cString: strerror(errno))
            close(fd)
            throw TestFailure("bind/listen on 127.0.0.1: \(e)")
        }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }
}
