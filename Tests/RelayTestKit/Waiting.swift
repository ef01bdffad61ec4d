import Foundation
import XCTest

// The one way a test waits in real time: it looks at an observable condition (an event
// seen, a log line, a metric, a Redis key, a counter) every `interval` seconds until a
// deadline. A fixed sleep is never a synchronisation; the only other sleeps in the tests
// pace a client or a scripted peer on purpose, and say so.
//
// * `eventually` — the condition must become true before the deadline;
// * `consistently(for:)` — the condition must stay true for a whole window (a quiet
//   window: "nothing more arrives", "nothing is answered while the nodes disagree");
// * `pollUntil` — the loop under both, for helpers that report a timeout their own way
//   (a child process that did not start throws its log).
//
// `eventually` and `consistently` record the failure at the caller's file and line
// (XCTFail) and then throw `WaitFailed`, so the test stops there instead of going on
// with a state it did not reach.

/// The real-time interval between two looks at a condition, in seconds.
public let defaultPollInterval = 0.02

/// Thrown by `eventually` and `consistently` after they recorded their failure.
public struct WaitFailed: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Looks at `condition` every `interval` seconds until it holds or `timeout` seconds have
/// passed (at least once, and once more at the deadline). Records nothing.
/// - Returns: whether the condition held.
@discardableResult
@_disfavoredOverload   // in an async context the async twin below is chosen
public func pollUntil(timeout: Double, every interval: Double = defaultPollInterval,
                      _ condition: () throws -> Bool) rethrows -> Bool {
    let until = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        let left = until.timeIntervalSinceNow
        if left <= 0 { return false }
        usleep(useconds_t(min(interval, left) * 1_000_000))   // poll interval, with a deadline
    }
}

/// `pollUntil` for async code: sleeps with `Task.sleep`, so the waiting task frees its thread.
@discardableResult
public func pollUntil(timeout: Double, every interval: Double = defaultPollInterval,
                      _ condition: () async throws -> Bool) async rethrows -> Bool {
    let until = Date().addingTimeInterval(timeout)
    while true {
        if try await condition() { return true }
        let left = until.timeIntervalSinceNow
        if left <= 0 { return false }
        try? await Task.sleep(nanoseconds: UInt64(min(interval, left) * 1e9))   // poll interval, with a deadline
    }
}

/// Waits until `condition` holds, looking every `interval` seconds for up to `timeout`
/// seconds. On timeout: fails the test with "timed out waiting for <what>" at the caller's
/// file and line, then throws `WaitFailed` so the caller stops. `what` is built only then,
/// so it may describe the state at the timeout. An error thrown by `condition` is passed on.
@_disfavoredOverload   // in an async context the async twin below is chosen
public func eventually(_ timeout: Double = 10, _ what: @autoclosure () -> String,
                       every interval: Double = defaultPollInterval,
                       file: StaticString = #filePath, line: UInt = #line,
                       _ condition: () throws -> Bool) throws {
    if try pollUntil(timeout: timeout, every: interval, condition) { return }
    throw recordWaitFailure("timed out waiting for \(what()) (\(timeout) s)", file: file, line: line)
}

/// `eventually` for async code: sleeps with `Task.sleep`, so the waiting task frees its thread.
public func eventually(_ timeout: Double = 10, _ what: @autoclosure () -> String,
                       every interval: Double = defaultPollInterval,
                       file: StaticString = #filePath, line: UInt = #line,
                       _ condition: () async throws -> Bool) async throws {
    if try await pollUntil(timeout: timeout, every: interval, condition) { return }
    throw recordWaitFailure("timed out waiting for \(what()) (\(timeout) s)", file: file, line: line)
}

/// Checks that `condition` stays true for `window` seconds, looking every `interval`
/// seconds (at the start, and once more at the end of the window). The first time it does
/// not hold: fails the test with "<what> stopped holding after … s" at the caller's file
/// and line, then throws `WaitFailed`. For the windows in which a test checks that nothing
/// happens (nothing answered twice, no reconnect, nothing delivered after a teardown).
public func consistently(for window: Double, _ what: @autoclosure () -> String,
                         every interval: Double = defaultPollInterval,
                         file: StaticString = #filePath, line: UInt = #line,
                         _ condition: () throws -> Bool) throws {
    let start = Date()
    let until = start.addingTimeInterval(window)
    while true {
        guard try condition() else {
            let after = String(format: "%.2f", Date().timeIntervalSince(start))
            throw recordWaitFailure("\(what()) stopped holding after \(after) s of a \(window) s window", file: file, line: line)
        }
        let left = until.timeIntervalSinceNow
        if left <= 0 { return }
        usleep(useconds_t(min(interval, left) * 1_000_000))   // poll interval of the window
    }
}

private func recordWaitFailure(_ message: String, file: StaticString, line: UInt) -> WaitFailed {
    XCTFail(message, file: file, line: line)
    return WaitFailed(message)
}
