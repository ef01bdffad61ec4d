import Foundation
import Glibc
import RelayCore

/// A TCP proxy on 127.0.0.1 in front of `target`: counts the bytes it forwards from the
/// server to each client connection (in accept order), independently of the client.
public final class CountingProxy: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    /// Server → client bytes written to each accepted connection, in accept order.
    public let downstream = LockedBox<[Int]>([])
    private let stopped = LockedBox(false)

    public init(target: Int) throws {
        (listener, port) = try LoopbackSocket.listen(backlog: 16)
        let fd = listener, down = downstream, stop = stopped
        Thread {
            while !stop.value {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                guard let server = try? LoopbackSocket.connect(port: target) else { Glibc.close(client); continue }
                var index = 0
                down.mutate { index = $0.count; $0.append(0) }
                let i = index
                CountingProxy.pump(from: client, to: server) { _ in }
                CountingProxy.pump(from: server, to: client) { n in down.mutate { $0[i] += n } }
            }
        }.start()
    }

    /// Copies `from` → `to` on its own thread until EOF or an error, reporting each write.
    private static func pump(from: Int32, to: Int32, wrote: @escaping @Sendable (Int) -> Void) {
        Thread {
            var buf = [UInt8](repeating: 0, count: 16_384)
            while true {
                let n = buf.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                var off = 0
                while off < n {
                    let w = buf.withUnsafeBytes { write(to, $0.baseAddress! + off, n - off) }
                    if w <= 0 { break }
                    wrote(w)
                    off += w
                }
                if off < n { break }
            }
            shutdown(to, Int32(SHUT_WR))
            shutdown(from, Int32(SHUT_RD))
        }.start()
    }

    public func stop() {
        stopped.value = true
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }
}
