import RelayCore
import RelayLoop

/// One running upstream call (one generation's source of events), confined to its
/// worker's loop thread.
///
/// The adapter maps its upstream format to `delta` / `done` / `error` events
/// (DESIGN §4) and hands them to the `emit` closure given to `start`, in order. It
/// emits exactly one terminal event (`done` or `error`) last, unless `cancel()` is
/// called first; after `cancel()` it emits nothing more.
public protocol Upstream: AnyObject {
    /// Starts the call; `emit` runs on the loop thread for each event.
    func start(emit: @escaping (StreamEvent) -> Void)
    /// Stops at once (aborting any transfer) and returns the usage so far
    /// (completion tokens counted from the deltas emitted when the upstream did not
    /// report them). Emits nothing.
    func cancel() -> Usage
}

/// Creates the `Upstream` for a request. One factory per worker (it may hold
/// per-worker resources such as a libcurl multi handle).
public protocol UpstreamFactory: AnyObject {
    /// - Throws: `APIError` (400 `invalid_request`) for a model this upstream does not serve.
    func makeUpstream(for request: ChatRequest, loop: EventLoop) throws -> Upstream
}
