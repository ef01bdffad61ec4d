import RelayHTTP

/// Where the `Subscription` of a waiting offset read writes (`StreamSink`): no
/// connection, only signals. An event written (or a relay-raised `error` event) wakes
/// the read; the subscription ending, or being aborted (drain, slow consumer), is
/// reported. In SSE mode the heartbeats (`: ping`) and the backlog checks go to the
/// read's own connection. Loop thread only.
final class OffsetReadWake: StreamSink {
    var onClose: (() -> Void)?
    private weak var forward: HTTPExchange?
    private let wake: () -> Void
    private let ended: () -> Void
    private let aborted: () -> Void
    private var done = false

    /// - Parameters:
    ///   - forward: the SSE read's connection (heartbeats, backlog), `nil` for a long-poll.
    ///   - wake: an event was written; `ended`: the subscription ended itself;
    ///     `aborted`: the drain or the slow-consumer cut ended it.
    init(forward: HTTPExchange?, wake: @escaping () -> Void, ended: @escaping () -> Void, aborted: @escaping () -> Void) {
        self.forward = forward
        self.wake = wake
        self.ended = ended
        self.aborted = aborted
    }

    /// A heartbeat (the only text a subscription writes): forwarded in SSE mode.
    @discardableResult func write(_ text: String) -> Bool {
        guard !done else { return false }
        if let forward { return forward.write(text) }
        return true
    }

    /// An event (or a relay-raised `error` event): wakes the read.
    @discardableResult func write(_ frame: WireFrame) -> Bool {
        guard !done else { return false }
        wake()
        return true
    }

    var pendingOutputBytes: Int { forward?.pendingOutputBytes ?? 0 }
    var unsentBytes: Int { forward?.unsentBytes ?? 0 }

    func endStream() {
        guard !done else { return }
        done = true
        ended()
    }

    func abort() {
        guard !done else { return }
        done = true
        aborted()
    }
}
