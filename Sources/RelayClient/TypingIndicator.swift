/// The typing indicator shown between Send and the first rendered text.
///
/// It appears at once when the request starts and covers the first ~500 ms before
/// any token (`expectedFirstTokenMs`, the typical time to first token); it stays
/// while nothing has been rendered, and `isOverdue` tells the app when that wait
/// exceeds 500 ms (e.g. to add "Connecting…"). Times in ms.
public struct TypingIndicator: Sendable, Equatable {
    /// The time to first token the indicator is designed to cover, ms.
    public static let expectedFirstTokenMs: Int64 = 500

    /// When the request started.
    public let startedAt: Int64
    /// When text was first rendered, if it has been.
    public private(set) var firstRenderAt: Int64?

    public init(startedAt: Int64) {
        self.startedAt = startedAt
    }

    /// Records the first render (later calls are ignored).
    public mutating func textRendered(now: Int64) {
        if firstRenderAt == nil { firstRenderAt = now }
    }

    /// `true` until text is rendered.
    public var isVisible: Bool { firstRenderAt == nil }

    /// `true` when still waiting for text more than 500 ms after the start.
    public func isOverdue(now: Int64) -> Bool {
        isVisible && now - startedAt > Self.expectedFirstTokenMs
    }
}
