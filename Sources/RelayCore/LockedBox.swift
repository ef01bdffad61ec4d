import Foundation

/// A value behind a lock (`NSLock`), for the few pieces of state shared across threads
/// or tasks outside a worker loop (client kit state, signal handlers, test threads).
/// Never used on a worker's hot path: workers confine their state to their thread.
public final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var v: T

    public init(_ v: T) { self.v = v }

    /// The value (read or replaced under the lock).
    public var value: T {
        get { lock.withLock { v } }
        set { lock.withLock { v = newValue } }
    }

    /// Changes the value in place under the lock and returns `f`'s result.
    @discardableResult
    public func mutate<R>(_ f: (inout T) -> R) -> R { lock.withLock { f(&v) } }
}
