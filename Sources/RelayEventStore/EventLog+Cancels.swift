import Foundation
import RelayCore
import RelayRedis

/// Cancel markers and the cancel channel (docs/PROTOCOL.md §7, docs/DATA_MODEL.md §7).
extension EventLog {
    /// Lifetime of a cancel marker, ms (`StreamKeys.cancel`): how long a `DELETE` that came
    /// before its stream still stops the stream once created (docs/PROTOCOL.md §7).
    public static let cancelMarkerMs = 60_000

    /// A `DELETE` of stream `id` by `owner` (`Scripts.requestCancel`): leaves the cancel
    /// marker for `cancelMarkerMs` unless the stream exists and has ended. `done` gets what
    /// it found (`CancelRequest`, declared with the script).
    public func requestCancel(_ id: RequestID, owner: String, done: @escaping (Result<CancelRequest, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(Scripts.requestCancel, keys: [k.meta, k.cancel], args: [owner, String(EventLog.cancelMarkerMs)], done: done)
    }

    /// Whether a `DELETE` left the cancel marker of stream `id` (`EXISTS`): read once the
    /// stream's generation is registered, before its upstream is started.
    public func isCancelRequested(_ id: RequestID, done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        connection.send(["EXISTS", StreamKeys(id).cancel]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success((r.int ?? 0) > 0))
        }
    }

    /// Asks the owning instance, wherever it is, to stop generating `id`:
    /// `PUBLISH relay:cancel <id>` (docs/DATA_MODEL.md §7).
    public func publishCancel(_ id: RequestID, done: @escaping (Result<Void, RedisFailure>) -> Void) {
        connection.send(["PUBLISH", StreamKeys.cancelChannel, id.value]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success(()))
        }
    }
}
