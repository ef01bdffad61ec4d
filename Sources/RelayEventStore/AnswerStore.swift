import RelayCore
import RelayRedis

/// The retained answers in Redis (docs/DATA_MODEL.md §14): reading one record, the
/// owner's index, and the admin erase of every record of one owner. The record itself is
/// written by `Scripts.appendFinal` (with the final event); its value's encoding is
/// `RetainedAnswer`'s alone. Loop thread only, on the worker's command connection.
public final class AnswerStore {
    /// The worker's command connection.
    public let connection: any RedisCommandChannel

    /// Opens records sealed at rest (docs/DATA_MODEL.md §15); the worker's, set by `EventLog`.
    public var cipher: AtRestCipher?

    public init(connection: any RedisCommandChannel) {
        self.connection = connection
    }

    /// Why a stored record could not be read.
    public enum ReadFailure: Error, Sendable {
        /// Redis failed or is unreachable.
        case redis(RedisFailure)
        /// The value does not open with this relay's keys (docs/DATA_MODEL.md §15), or is
        /// not a `RetainedAnswer` (damage, another version's encoding): why, for logs.
        case unreadable(String)
    }

    /// Reads stream `id`'s retained answer (`GET relay:{id}:answer`); `nil` when there is
    /// none (never written, expired, erased).
    public func read(_ id: RequestID, done: @escaping (Result<RetainedAnswer?, ReadFailure>) -> Void) {
        let key = StreamKeys(id).answer
        connection.send(["GET", key]) { [cipher] r in
            if let f = r.failure { return done(.failure(.redis(f))) }
            guard case .bulk(var bytes) = r else { return done(.success(nil)) }
            // A record outlives its stream's meta, so it says its own mode: sealed, or
            // plaintext marked as written without keys (`RetainedAnswer.plainAtRest`); a relay
            // without keys reads any plaintext, one with keys refuses unmarked plaintext.
            let plain = !SealedFormat.looksSealed(bytes) && (cipher == nil || RetainedAnswer.isMarkedPlain(bytes))
            do { bytes = try AtRestValue.open(bytes: bytes, key: key, mode: plain ? .plain : .sealed, cipher: cipher) } catch {
                return done(.failure(.unreadable("\(error)")))
            }
            guard let a = try? RetainedAnswer(decoding: bytes) else {
                return done(.failure(.unreadable("\(key): not a retained answer record (damaged, or another version's encoding)")))
            }
            done(.success(a))
        }
    }

    /// Adds stream `id` to its owner's index with the record's expiry (unix ms), drops
    /// lapsed entries and extends the index's own expiry to the latest entry's
    /// (`ZREMRANGEBYSCORE`, `ZADD`, `PEXPIREAT … GT`; three commands on the owner's slot,
    /// sent before the final append). `done` gets whether Redis took the `ZADD`.
    /// - Parameter ownerHash: `OwnerHash.of(sub)`; `id` is scoped by it.
    public func index(_ id: RequestID, ownerHash: String, expiresAtMs: UInt64, nowMs: UInt64,
                      done: @escaping (Bool) -> Void) {
        let key = StreamKeys.answerIndex(ownerHash: ownerHash)
        connection.send(["ZREMRANGEBYSCORE", key, "-inf", String(nowMs)], nil)
        connection.send(["ZADD", key, String(expiresAtMs), id.clientValue]) { r in done(r.failure == nil) }
        // `GT`: only ever later (a record written earlier may outlive this one's call).
        connection.send(["PEXPIREAT", key, String(expiresAtMs), "GT"]) { r in
            // A key without an expiry refuses `GT` (it counts as infinite): it was just
            // created by the `ZADD`, so set it plainly.
            if r.int == 0 { self.connection.send(["PEXPIREAT", key, String(expiresAtMs), "NX"], nil) }
        }
    }

    /// Most index entries erased per round of `erase`.
    public static let eraseBatch = 256

    /// Erases every retained answer of one owner (a data-erasure request for `sub`): walks
    /// the owner's index in batches (`ZRANGE 0 <batch − 1>`), deletes each answer's record
    /// and whatever is left of its stream (`DEL` of `answer`, `events`, `meta`, `text`,
    /// `offsets`, the stored request of a takeover with the user's messages, `delivered`:
    /// one command per answer, each answer's keys on their own slot), then
    /// removes the batch from the index (`ZREM`), until the index is empty. An answer that
    /// finishes during the erase may be retained after it (the caller revokes the user's
    /// sessions first to stop new ones).
    /// `done` gets the number of records deleted, or the first Redis failure.
    public func erase(ownerHash: String, done: @escaping (Result<Int, RedisFailure>) -> Void) {
        eraseRound(ownerHash: ownerHash, erased: 0, done: done)
    }

    private func eraseRound(ownerHash: String, erased: Int, done: @escaping (Result<Int, RedisFailure>) -> Void) {
        let key = StreamKeys.answerIndex(ownerHash: ownerHash)
        connection.send(["ZRANGE", key, "0", String(AnswerStore.eraseBatch - 1)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            let members = (r.array ?? []).compactMap { $0.string }
            if members.isEmpty { return done(.success(erased)) }
            var pending = members.count
            var count = erased
            var failure: RedisFailure?
            let finished = {
                if let failure { return done(.failure(failure)) }
                self.connection.send(["ZREM", key] + members) { r in
                    if let f = r.failure { return done(.failure(f)) }
                    self.eraseRound(ownerHash: ownerHash, erased: count, done: done)
                }
            }
            for m in members {
                // The index holds client ids; a malformed member (not written by the
                // relay) names no keys and is only removed.
                guard let client = try? RequestID(validating: m) else {
                    pending -= 1
                    if pending == 0 { finished() }
                    continue
                }
                let k = StreamKeys(client.scoped(by: ownerHash))
                self.connection.send(["DEL", k.answer]) { r in
                    if let f = r.failure { failure = failure ?? f } else { count += Int(r.int ?? 0) }
                    pending -= 1
                    if pending == 0 { finished() }
                }
                self.connection.send(["DEL", k.events, k.meta, k.text, k.offsets, k.request, k.delivered], nil)
            }
        }
    }
}
