import Foundation
import RelayCore
import RelayLoop
import RelayUpstream
import XCTest

/// Runs an `EventLoop` on the test thread with a `CurlMulti`, driving one upstream at a time
/// until its terminal event, with a safety deadline so no test can hang.
final class LoopHarness {
    let loop: EventLoop
    let multi: CurlMulti

    init() throws {
        loop = try EventLoop()
        multi = try CurlMulti(loop: loop)
    }

    /// Starts `upstream` and runs the loop until it emits a terminal event (or `onEvent`
    /// stops the loop, or `deadlineMs` passes: a test failure).
    /// - Returns: every event emitted, in order.
    func collect(_ upstream: Upstream, deadlineMs: UInt64 = 10_000,
                 file: StaticString = #filePath, line: UInt = #line,
                 onEvent: ((StreamEvent) -> Bool)? = nil) -> [StreamEvent] {
        var events: [StreamEvent] = []
        var finished = false
        let loop = self.loop
        let safety = LoopTimer(loop: loop) {
            XCTFail("upstream gave no terminal event within \(deadlineMs) ms", file: file, line: line)
            loop.stop()
        }
        safety.schedule(afterMs: deadlineMs)
        upstream.start { e in
            events.append(e)
            let keepGoing = onEvent?(e) ?? true
            if e.isTerminal || !keepGoing {
                finished = true
                loop.stop()
            }
        }
        if !finished { loop.run() }
        safety.cancel()
        return events
    }

    /// Runs the loop for `ms` milliseconds.
    func spin(ms: UInt64) {
        let loop = self.loop
        let t = LoopTimer(loop: loop) { loop.stop() }
        t.schedule(afterMs: ms)
        loop.run()
    }

    /// `eventually` for a loop that runs on the test thread (what the condition waits for
    /// happens only while the loop runs): runs the loop in 10 ms steps until `condition`
    /// holds or `ms` passed; returns whether it holds.
    @discardableResult
    func spin(upTo ms: UInt64, until condition: () -> Bool) -> Bool {
        var waited: UInt64 = 0
        while !condition() && waited < ms {
            spin(ms: 10)
            waited += 10
        }
        return condition()
    }

    /// `consistently(for:)` for a loop that runs on the test thread: runs the loop for
    /// `ms` milliseconds in 10 ms steps; returns whether `condition` held at every step.
    func spin(for ms: UInt64, while condition: () -> Bool) -> Bool {
        var waited: UInt64 = 0
        while condition() {
            if waited >= ms { return true }
            spin(ms: 10)
            waited += 10
        }
        return false
    }
}

extension Array where Element == StreamEvent {
    /// The concatenated text of the deltas.
    var text: String {
        reduce(into: "") { s, e in if case .delta(let t) = e { s += t } }
    }

    /// The deltas' texts.
    var deltas: [String] {
        compactMap { if case .delta(let t) = $0 { return t } else { return nil } }
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}
