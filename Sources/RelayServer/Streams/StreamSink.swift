import RelayCore
import RelayHTTP

/// Where a `Subscription` writes its client's response: the evhttp connection
/// (`HTTPExchange`) in the relay, an in-memory recorder in tests. Loop thread only.
protocol StreamSink: AnyObject {
    /// Called once when the client closes the connection first (not after `endStream`
    /// or `abort`).
    var onClose: (() -> Void)? { get set }
    /// Writes SSE text (an event, a heartbeat) as one chunk; `false` when closed.
    @discardableResult func write(_ text: String) -> Bool
    /// Writes an already framed event (`WireFrame`, shared by every subscriber); `false`
    /// when closed.
    @discardableResult func write(_ frame: WireFrame) -> Bool
    /// Bytes accepted by `write` but not yet handed to the kernel (the slow-consumer cut).
    var pendingOutputBytes: Int { get }
    /// Bytes not yet sent to the client, the kernel's send queue included (the
    /// slow-link coalescing). Costs a syscall on a socket: read it sparingly.
    var unsentBytes: Int { get }
    /// Ends the response normally (the chunked terminator).
    func endStream()
    /// Ends the response without a terminal event (its chunked terminator, then the
    /// connection closes; reset if the client does not take it within a bound): the client
    /// resumes from Redis.
    func abort()
}

extension HTTPExchange: StreamSink {}
