import CLibevent
import Glibc
import Synchronization

/// One libevent `event_base`, owned by one worker thread.
///
/// Everything attached to the loop (HTTP listener, Redis connections, timers, upstream
/// transfers) is created, used and freed on the thread that calls `run()`. The only
/// cross-thread entry point is `post(_:)`, which queues a closure under a mutex and wakes
/// the loop through an `eventfd(2)` the loop reads. No other thread ever calls into the
/// `event_base`, so libevent runs without its pthreads locking (`evthread_use_pthreads`
/// takes and releases a mutex on every `event_add`, `event_del` and loop turn: about
/// eight pairs per delivered event, docs/BENCHMARKS.md).
public final class EventLoop: @unchecked Sendable {
    /// The raw `struct event_base *`, for C libraries that attach to the loop
    /// (hiredis' libevent adapter, evhttp, libcurl's socket callbacks).
    public let base: OpaquePointer
    private var wakeEvent: OpaquePointer?
    /// The wake-up counter: `post` adds 1 from any thread; the loop reads (and so
    /// clears) it before running what was posted.
    private let wakeFD: Int32
    private let posted = Mutex<[@Sendable () -> Void]>([])
    /// The thread inside `run()` (`pthread_self` as an integer; 0 while not running), for
    /// the debug-build check that nothing touches the loop from another thread.
    private let runningOn = Atomic<UInt>(0)

    /// Creates a loop with its own `event_base`.
    /// - Throws: `LoopError.cannotCreate` when libevent cannot allocate the base or the
    ///   kernel refuses the `eventfd` (file descriptors exhausted).
    public init() throws {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw LoopError.cannotCreate }
        guard let b = event_base_new() else {
            close(fd)
            throw LoopError.cannotCreate
        }
        base = b
        wakeFD = fd
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        wakeEvent = event_new(base, fd, Int16(EV_READ | EV_PERSIST), { _, _, arg in
            Unmanaged<EventLoop>.fromOpaque(arg!).takeUnretainedValue().drainPosted()
        }, ctx)
        // Every stored property is set from here on: a throw runs `deinit`, which frees the
        // base and closes the eventfd (freeing them here as well would free them twice).
        guard wakeEvent != nil else { throw LoopError.cannotCreate }
        event_add(wakeEvent, nil)
    }

    deinit {
        if let w = wakeEvent { event_free(w) }
        event_base_free(base)
        close(wakeFD)
    }

    /// Runs the loop on the calling thread until `stop()`; returns then.
    public func run() {
        runningOn.store(UInt(pthread_self()), ordering: .releasing)
        event_base_loop(base, 0)
        runningOn.store(0, ordering: .releasing)
    }

    /// Debug builds: traps when called from a thread other than the one inside `run()`
    /// while the loop runs (libevent runs without its locking: such a call is a data race
    /// on the `event_base`). Release builds: nothing.
    @inlinable
    public func assertOnLoopThread(_ what: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line) {
        assert(isOnLoopThreadOrIdle, "EventLoop touched from another thread while its loop runs: \(what())", file: file, line: line)
    }

    /// `true` on the loop's thread, or when the loop is not running.
    @usableFromInline
    var isOnLoopThreadOrIdle: Bool {
        let t = runningOn.load(ordering: .acquiring)
        return t == 0 || t == UInt(pthread_self())
    }

    /// Makes `run()` return after the current callbacks. Loop thread only; from another
    /// thread use `post { loop.stop() }`.
    public func stop() {
        assertOnLoopThread("stop()")
        event_base_loopbreak(base)
    }

    /// Queues `body` to run on the loop thread, and wakes the loop. Any thread. Closures
    /// run in the order posted, on the loop's next turn (or its first, if it is not
    /// running yet).
    public func post(_ body: @escaping @Sendable () -> Void) {
        posted.withLock { $0.append(body) }
        // Queued before the write: the loop reads the counter before taking the queue,
        // so a closure appended after it took the queue comes with a write after the read,
        // which wakes it again. A full counter (EAGAIN) is already readable.
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakeFD, $0.baseAddress, 8) }
    }

    private func drainPosted() {
        var count: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &count) { read(wakeFD, $0.baseAddress, 8) }
        let work = posted.withLock { q -> [@Sendable () -> Void] in
            let w = q
            q.removeAll()
            return w
        }
        for w in work { w() }
    }

    /// Milliseconds since an arbitrary fixed point (boot), monotonic: `CLOCK_MONOTONIC_COARSE`,
    /// the clock libevent's own timers run on for a base without
    /// `EVENT_BASE_FLAG_PRECISE_TIMER` (its resolution, 4 ms here, is the kernel tick;
    /// `clock_getres(2)`). Not `event_base_gettimeofday_cached`: that is the wall clock
    /// (libevent's cached monotonic time plus the wall clock's offset, re-read every
    /// 5 s), so a clock stepped back by NTP would move deadlines and retry times by the
    /// step, and `now - start` of an unsigned start time would trap.
    public var nowMs: UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        return UInt64(ts.tv_sec) &* 1000 &+ UInt64(ts.tv_nsec) / 1_000_000
    }
}

/// Errors creating loop resources.
public enum LoopError: Error {
    /// `event_base_new` or `event_new` returned NULL.
    case cannotCreate
}
