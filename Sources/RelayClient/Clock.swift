import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

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

/// The real clock, in milliseconds, that **keeps advancing while the device sleeps**
/// (the 5-minute idle rule compares times across a sleep; `conformance/CLIENT_RULES.md`):
/// `CLOCK_MONOTONIC` on Apple platforms (which, unlike Linux's, includes sleep; it is
/// `mach_continuous_time`), `CLOCK_BOOTTIME` on Linux (`clock_gettime(2)`).
/// `ProcessInfo.systemUptime` stops during sleep and is not used.
public struct SystemClock: RelayClock {
    public init() {}

    public func nowMs() -> Int64 {
        Self.continuousNowMs()
    }

    public func sleep(ms: Int64) async throws {
        guard ms > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(ms) * 1_000_000)
    }

    /// Milliseconds on the clock that includes sleep.
    public static func continuousNowMs() -> Int64 {
        #if canImport(Darwin)
        return Int64(clock_gettime_nsec_np(CLOCK_MONOTONIC) / 1_000_000)
        #elseif canImport(Glibc)
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) * 1_000 + Int64(ts.tv_nsec) / 1_000_000
        #else
        return Int64((ProcessInfo.processInfo.systemUptime * 1000).rounded(.down))
        #endif
    }
}
