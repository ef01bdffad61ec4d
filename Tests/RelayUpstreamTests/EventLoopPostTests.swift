import Foundation
import RelayLoop
import Synchronization
import XCTest

/// `EventLoop.post` wakes the loop through an eventfd, without libevent's pthreads locking
/// (issue 14): closures posted from other threads all run, on the loop thread, in each
/// poster's order, including those posted before the loop runs and while it drains.
final class EventLoopPostTests: XCTestCase {
    func testClosuresPostedFromManyThreadsAllRunOnTheLoopThreadInOrder() throws {
        let loop = try EventLoop()
        let posters = 4, each = 2_000
        let seen = Mutex<[[Int]]>(Array(repeating: [], count: posters))
        let total = Mutex(0)
        let wrongThread = Mutex(0)
        nonisolated(unsafe) var loopThread: pthread_t?
        // Posted before the loop runs: must run on its first turn.
        loop.post { loopThread = pthread_self() }
        let group = DispatchGroup()
        for p in 0..<posters {
            group.enter()
            Thread {
                for i in 0..<each {
                    loop.post {
                        if let t = loopThread, pthread_equal(t, pthread_self()) == 0 { wrongThread.withLock { $0 += 1 } }
                        seen.withLock { $0[p].append(i) }
                        let n = total.withLock { n -> Int in n += 1; return n }
                        if n == posters * each { loop.stop() }
                    }
                }
                group.leave()
            }.start()
        }
        let safety = LoopTimer(loop: loop) {
            XCTFail("not every posted closure ran within 10 s")
            loop.stop()
        }
        safety.schedule(afterMs: 10_000)
        loop.run()
        safety.cancel()
        XCTAssertEqual(group.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(total.withLock { $0 }, posters * each)
        XCTAssertEqual(wrongThread.withLock { $0 }, 0)
        for p in 0..<posters { XCTAssertEqual(seen.withLock { $0[p] }, Array(0..<each), "poster \(p) in order") }
    }

    /// A closure posted from inside a posted closure runs on a later turn (the wake
    /// counter was read before the queue was taken), not lost.
    func testAClosurePostedWhileDrainingRuns() throws {
        let loop = try EventLoop()
        nonisolated(unsafe) var ran = false
        loop.post { loop.post { ran = true; loop.stop() } }
        let safety = LoopTimer(loop: loop) { loop.stop() }
        safety.schedule(afterMs: 5_000)
        loop.run()
        safety.cancel()
        XCTAssertTrue(ran)
    }
}
