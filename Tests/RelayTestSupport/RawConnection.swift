import Foundation

/// A plain TCP connection to 127.0.0.1 with full control over when bytes are sent
/// and read: a slow reader with a small `SO_RCVBUF`, or a connection opened before
/// an event (SIGTERM) and used after it.
public final class RawConnection {
    private var fd: Int32

    /// Connects to `port`; `receiveBuffer` sets `SO_RCVBUF` before connecting (so the
    /// TCP window is small from the start).
    public init(port: Int, receiveBuffer: Int? = nil) throws {
        fd = try LoopbackSocket.connect(port: port, receiveBuffer: receiveBuffer)
    }

    deinit { close() }

    /// Sends all of `text`.
    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw TestFailure("send failed: \(String(cString: strerror(errno)))") }
            off += n
        }
    }

    /// Reads at most `max` bytes, waiting up to `timeout` s. Empty at EOF or reset;
    /// nil when nothing arrived in time.
    public func read(max: Int, timeout: Double) -> [UInt8]? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&pfd, 1, Int32(timeout * 1000)) == 0 { return nil }
        var tmp = [UInt8](repeating: 0, count: max)
        let n = tmp.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n <= 0 ? [] : Array(tmp[0..<n])
    }

    /// Reads until EOF (or `timeout` s of silence).
    public func readToEnd(timeout: Double) -> [UInt8] {
        var out: [UInt8] = []
        while let chunk = read(max: 65536, timeout: timeout), !chunk.isEmpty { out += chunk }
        return out
    }

    public func close() {
        if fd >= 0 {
            Foundation.close(fd)
            fd = -1
        }
    }
}
