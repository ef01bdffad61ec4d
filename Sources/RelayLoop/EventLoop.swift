import CLibevent
import Synchronization

/// One libevent `event_base`, owned by one worker thread.
///
/// Everything attached to the loop (HTTP listener, Redis connections, timers, upstream
/// transfers) is created, used and freed on the thread that calls `run()`. The only
/// cross-thread entry point is `post(_:)`, which queues a closure and wakes the loop
/// (libevent's pthreads locking, enabled once by `EventLoop.enableThreads()`).
public final class EventLoop: @unchecked Sendable {
    /// The raw `struct event_base *`, for C libraries that attach to the loop
    /// (hiredis' libevent adapter, evhttp, libcurl's socket callbacks).
    public let base: OpaquePointer
    private var wakeEvent: OpaquePointer?
    private let posted = Mutex<[@Sendable () -> Void]>([])

    /// Enables libevent's pthreads locking so `post(_:)` may be called from any thread.
    /// Call once, before any loop is created.
    public static func enableThreads() {
        _ = evthread_use_pthreads()
    }

    /// Creates a loop with its own `event_base`.
    /// - Throws: `LoopError.cannotCreate` when libevent cannot allocate the base.
    public init() throws {
        guard let b = event_base_new() else { throw LoopError.cannotCreate }
        base = b
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        wakeEvent = event_new(base, -1, Int16(EV_PERSIST), { _, _, arg in
            Unmanaged<EventLoop>.fromOpaque(arg!).takeUnretainedValue().drainPosted()
        }, ctx)
        event_add(wakeEvent, nil)
    }

    deinit {
        if let w = wakeEvent { event_free(w) }
        event_base_free(base)
    }

    /// Runs the loop on the calling thread until `stop()`; returns then.
    public func run() {
        event_base_loop(base, 0)
    }

    /// Makes `run()` return after the current callbacks. Loop thread only; from another
    /// thread use `post { loop.stop() }`.
    public func stop() {
        event_base_loopbreak(base)
    }

    /// Queues `body` to run on the loop thread, and wakes the loop. Any thread.
    public func post(_ body: @escaping @Sendable () -> Void) {
        posted.withLock { $0.append(body) }
        event_active(wakeEvent, Int32(EV_READ), 0)
    }

    private func drainPosted() {
        let work = posted.withLock { q -> [@Sendable () -> Void] in
            let w = q
            q.removeAll()
            return w
        }
        for w in work { w() }
    }

    /// Milliseconds since an arbitrary fixed point (monotonic): the loop's cached time.
    public var nowMs: UInt64 {
        var tv = timeval()
        event_base_gettimeofday_cached(base, &tv)
        return UInt64(tv.tv_sec) * 1000 + UInt64(tv.tv_usec) / 1000
    }
}

/// Errors creating loop resources.
public enum LoopError: Error {
    /// `event_base_new` or `event_new` returned NULL.
    case cannotCreate
}
