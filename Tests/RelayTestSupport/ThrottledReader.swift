import Foundation

/// A client on a slow link (a GPRS/EDGE-class reader): a `RawConnection`
/// with a small `SO_RCVBUF` (so the TCP window, and with it what the relay can push
/// ahead, stays small) read at `bytesPerSecond` by a token bucket that refills every
/// 20 ms. Records every byte received, exactly, and when the last one arrived.
public final class ThrottledReader {
    /// Every byte received (HTTP head, chunk framing and SSE), in order.
    public private(set) var received: [UInt8] = []
    /// When the last byte arrived.
    public private(set) var lastByteAt: Date?
    /// The relay closed the connection.
    public private(set) var closed = false
    private let connection: RawConnection
    private let bytesPerSecond: Int

    /// Connects to `port` with `SO_RCVBUF` = `receiveBuffer` bytes.
    public init(port: Int, bytesPerSecond: Int, receiveBuffer: Int = 2_048) throws {
        connection = try RawConnection(port: port, receiveBuffer: receiveBuffer)
        self.bytesPerSecond = bytesPerSecond
    }

    /// Sends the request (unthrottled: the uplink is not what is measured).
    public func send(_ request: String) throws { try connection.send(request) }

    /// Reads at the throttled rate until the relay closes the connection or `timeout`
    /// seconds pass; returns whether it closed.
    @discardableResult
    public func readToEnd(timeout: Double) -> Bool {
        let until = Date().addingTimeInterval(timeout)
        let tick = 0.02
        let perTick = max(1, Int(Double(bytesPerSecond) * tick))
        var allowance = 0
        var next = Date()
        while Date() < until {
            allowance = min(allowance + perTick, perTick * 5)
            while allowance > 0, let chunk = connection.read(max: allowance, timeout: 0) {
                if chunk.isEmpty { closed = true; return true }
                received += chunk
                lastByteAt = Date()
                allowance -= chunk.count
            }
            // Pacing on purpose: the next 20 ms of link capacity.
            next = next.addingTimeInterval(tick)
            let wait = next.timeIntervalSinceNow
            if wait > 0 { usleep(useconds_t(wait * 1_000_000)) }
        }
        return closed
    }
}
