import Foundation

/// A monotonic source of time in **milliseconds**, injected into everything in
/// `RelayClient` that makes a time-based decision (the 50 ms render interval, the
/// 1 s / 3 s reconnect backoff, the 60 s hard timeout, the 5 min idle limit).
///
/// The pure state machines (`RenderBuffer`, `ReconnectPolicy`, `ResponseRenderer`, …)
/// take `now` as an argument; the networking layer reads it from a `RelayClock`, so
/// tests drive every rule with a virtual clock and never sleep.
///
/// The name avoids shadowing the standard library's `Clock` protocol in apps that
/// import this module.
public protocol RelayClock: Sendable {
    /// Milliseconds since an arbitrary, fixed origin; never decreases.
    func nowMs() -> Int64
    /// Suspends the caller for `ms` milliseconds of this clock's time.
    func sleep(ms: Int64) async throws
}

/// The real clock: monotonic uptime (`ProcessInfo.systemUptime`) in milliseconds.
public struct SystemClock: RelayClock {
    public init() {}

    public func nowMs() -> Int64 {
        Int64((ProcessInfo.processInfo.systemUptime * 1000).rounded(.down))
    }

    public func sleep(ms: Int64) async throws {
        guard ms > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(ms) * 1_000_000)
    }
}
