import CLibevent

/// A one-shot or repeating timer on an `EventLoop`, confined to the loop's thread.
///
/// The timer owns its libevent `event` and frees it in `deinit`; the owner keeps the
/// timer alive as long as it may fire. The handler must not retain the timer's owner
/// strongly if the owner holds the timer (use `[weak self]`/`unowned`).
public final class LoopTimer {
    private var event: OpaquePointer?
    /// Held for the debug-build thread check (and so the base outlives the timer's event).
    private let loop: EventLoop
    private let handler: () -> Void
    private let repeating: Bool

    /// Creates a stopped timer. `repeating`: fires every interval until `cancel()`.
    public init(loop: EventLoop, repeating: Bool = false, handler: @escaping () -> Void) {
        self.handler = handler
        self.repeating = repeating
        self.loop = loop
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        event = event_new(loop.base, -1, Int16(repeating ? EV_PERSIST : 0), { _, _, arg in
            Unmanaged<LoopTimer>.fromOpaque(arg!).takeUnretainedValue().handler()
        }, ctx)
    }

    deinit {
        loop.assertOnLoopThread("LoopTimer freed")
        if let e = event { event_free(e) }
    }

    /// (Re)arms the timer to fire after `ms` milliseconds (then every `ms` if repeating).
    public func schedule(afterMs ms: UInt64) {
        loop.assertOnLoopThread("LoopTimer.schedule")
        var tv = timeval(tv_sec: Int(ms / 1000), tv_usec: Int((ms % 1000) * 1000))
        event_add(event, &tv)
    }

    /// Disarms the timer; it can be scheduled again.
    public func cancel() {
        loop.assertOnLoopThread("LoopTimer.cancel")
        event_del(event)
    }

    /// `true` while armed.
    public var isScheduled: Bool {
        event_pending(event, Int16(EV_TIMEOUT), nil) != 0
    }
}
