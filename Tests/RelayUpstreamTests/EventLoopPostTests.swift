import Foundation
import RelayLoop
import Synchronization
import XCTest

/// `EventLoop.post` wakes the loop through an eventfd, without libevent's pthreads locking:
/// closures posted from other threads all run, on the loop thread, in each
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

    /// A poster that waits for each closure before posting the next finds the
    /// loop asleep in `epoll_wait` every time (the wake-up path, not the drain path): no
    /// wake-up is lost over 3,000 round trips, with pauses of 0–200 µs between them.
    func testPingPongPostsToAnIdleLoopAreNeverLost() throws {
        let loop = try EventLoop()
        let rounds = 3_000
        let lost = Mutex(0)
        let poster = Thread {
            let sem = DispatchSemaphore(value: 0)
            for i in 0..<rounds {
                loop.post { sem.signal() }
                if sem.wait(timeout: .now() + 2) == .timedOut { lost.withLock { $0 += 1 }; break }
                if i % 3 == 0 { usleep(UInt32(i % 200)) }   // pacing on purpose: 0–200 µs between round trips
            }
            loop.post { loop.stop() }
        }
        let safety = LoopTimer(loop: loop) { XCTFail("ping-pong did not finish within 30 s"); loop.stop() }
        safety.schedule(afterMs: 30_000)
        poster.start()
        loop.run()
        safety.cancel()
        XCTAssertEqual(lost.withLock { $0 }, 0, "a posted closure waited 2 s for a wake-up")
    }

    /// Loops created, run and freed many times leave no file descriptor behind
    /// (the eventfd, libevent's epoll fd and signal pair), including loops never run and
    /// loops with closures still queued when freed.
    func testLoopsCreatedAndFreedManyTimesLeakNoDescriptor() throws {
        func openFDs() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
        let before = openFDs()
        for i in 0..<300 {
            let loop = try EventLoop()
            if i % 3 == 0 {
                loop.post { loop.stop() }
                loop.run()
            } else if i % 3 == 1 {
                loop.post {}   // queued, never run: freed with the loop
            }
        }
        // Other tests' threads may still open or close a descriptor or two meanwhile (the
        // count is the whole process'), so the check is on scale: a descriptor leaked by
        // any one of the three kinds of loop above is 100 or more.
        XCTAssertLessThan(openFDs() - before, 100, "descriptors open before (\(before)) and after 300 loops")
    }
}
