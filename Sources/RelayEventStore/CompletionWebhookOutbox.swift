import RelayRedis

/// The completion webhooks' outbox in Redis (docs/DATA_MODEL.md §13): every message due,
/// shared by all instances, so a message survives the instance that ended its answer and
/// the one that was sending it.
///
/// Keys, one Redis Cluster slot (hash tag `{relay:webhooks}`):
/// * `relay:webhooks:{relay:webhooks}:due` — sorted set, member the `webhook-id`, score the
///   Redis time (ms) it is next due; while an instance holds a claim, the claim's end;
/// * `…:msgs` — hash `webhook-id` → the message's record (`<scoped request id> <ended ms> <sub>`);
/// * `…:attempts` — hash `webhook-id` → attempts made so far;
/// * `…:claims` — hash `webhook-id` → the token of the instance sending it now;
/// * `…:sent` — sorted set of `webhook-id`s given up or delivered, score the Redis time
///   (ms); kept 24 h so a late second enqueue of the same answer is refused;
/// * `…:needkeys` — hash `webhook-id` → 1 for a message whose final event is sealed under a
///   key the instance that tried it lacks: instances without keys leave it to those with
///   them (they claim it only once it has waited `keylessPatienceMs`, to drop it when its
///   stream expired), so a mixed fleet during a switch to encryption still sends it.
///
/// All times are Redis's clock (`TIME` inside the scripts), so instances with skewed
/// clocks agree on what is due and on when a claim lapsed. Each script runs atomically:
/// one instance claims a message at a time, and only the holder of the current claim can
/// settle it. The scripts are `Lua/outbox*.lua` (`Scripts.outboxEnqueue`, `outboxClaim`,
/// `outboxSettle`, `outboxSubject`). Loop thread only.
public final class CompletionWebhookOutbox {
    private let connection: any RedisCommandChannel
    private let scripts: ScriptRunner
    /// Opens the final event sealed at rest (docs/DATA_MODEL.md §15); the worker's.
    private let cipher: AtRestCipher?

    /// The outbox's keys, in the order its scripts get them: due, msgs, attempts, claims,
    /// sent, needkeys.
    public static let keys: [String] = ["due", "msgs", "attempts", "claims", "sent", "needkeys"].map { "relay:webhooks:{relay:webhooks}:" + $0 }

    /// How long a message needing keys waits before an instance without keys claims it
    /// again (to find its stream expired and drop it), ms.
    public static let keylessPatienceMs = 30_000

    /// How long a delivered or dropped id is remembered against a second enqueue, ms.
    public static let sentMemoryMs = 86_400_000

    /// - Parameter cipher: the worker's (`EventLog.cipher`): the final event is read by
    ///   its stream's `AtRestMode` like every other stored value.
    public init(connection: any RedisCommandChannel, scripts: ScriptRunner, cipher: AtRestCipher? = nil) {
        self.cipher = cipher
        self.connection = connection
        self.scripts = scripts
    }

    /// The scripts to `SCRIPT LOAD` on every (re)connection (`Scripts.outbox`).
    public static var allScripts: [LuaSource] { Scripts.outbox }

    /// One claimed message.
    public struct Claimed: Equatable, Sendable {
        /// The `webhook-id`.
        public let id: String
        /// The stream's scoped request id (`<owner hash>:<request id>`).
        public let scopedID: String
        /// The token's `sub` of the stream's owner.
        public let sub: String
        /// When the answer ended, Unix ms (the ending instance's clock).
        public let endedMs: Int64
        /// Attempts made before this claim.
        public let attempts: Int
    }

    /// Queues message `id` of stream `scopedID` owned by `sub`, which ended at `endedMs`
    /// (Unix ms), first due in `delayMs`. Idempotent per id. `done` gets `true` when
    /// queued, `false` when it was already queued or sent, `nil` on a Redis failure.
    public func enqueue(id: String, scopedID: String, sub: String, endedMs: Int64, delayMs: Int,
                        done: @escaping (Bool?) -> Void) {
        scripts.run(Scripts.outboxEnqueue, keys: Self.keys, args: [id, "\(scopedID) \(endedMs) \(sub)", String(delayMs)]) { r in
            done(try? r.get().queued)
        }
    }

    /// Claims up to `limit` due messages for `claimMs` under `token`. `done` gets them
    /// (empty on a Redis failure).
    public func claim(token: String, claimMs: Int, limit: Int, done: @escaping ([Claimed]) -> Void) {
        scripts.run(Scripts.outboxClaim, keys: Self.keys,
                    args: [String(claimMs), token, String(limit), String(Self.sentMemoryMs), cipher != nil ? "1" : "0",
                           String(Self.keylessPatienceMs)]) { r in
            done((try? r.get().claimed) ?? [])
        }
    }

    /// How a claimed message is settled.
    public enum Settlement: Sendable, Equatable {
        /// Delivered or given up: removed, and remembered against a second enqueue.
        case done
        /// An attempt failed: counted, due again after `afterMs`.
        case retry(afterMs: Int)
        /// Not attempted (the answer's end is not stored yet): due again after `afterMs`.
        case later(afterMs: Int)
        /// Not attempted: the final event is sealed under a key this instance lacks; due
        /// again after `afterMs`, for instances with keys (`keylessPatienceMs`).
        case needsKeys(afterMs: Int)
    }

    /// Settles claimed message `id` held under `token`. `done` gets `true` when settled,
    /// `false` when the claim had lapsed and was taken by another instance, `nil` on a
    /// Redis failure (the claim then lapses and the message is claimed again).
    public func settle(id: String, token: String, _ s: Settlement, done: @escaping (Bool?) -> Void) {
        let args: [String]
        switch s {
        case .done: args = [id, token, "done", "0"]
        case .retry(let ms): args = [id, token, "retry", String(ms)]
        case .later(let ms): args = [id, token, "later", String(ms)]
        case .needsKeys(let ms): args = [id, token, "needkeys", String(ms)]
        }
        scripts.run(Scripts.outboxSettle, keys: Self.keys, args: args) { r in
            done(try? r.get().settled)
        }
    }

    /// What the stream says about a due message.
    public enum Subject: Equatable, Sendable {
        /// The stream's keys are gone (expired): nothing to report.
        case gone
        /// The stream still runs (its final event is not stored yet).
        case running
        /// The stream ended with `finalEventJSON` (opened: plaintext JSON); `read`: some
        /// client got that event.
        case ended(finalEventJSON: String, read: Bool)
        /// The final event is stored but does not open here (a key this relay lacks,
        /// another key under the same kid, plaintext in a sealed stream, damage).
        case unreadable(AtRestOpenError)
        /// Redis could not be asked.
        case unknown
    }

    /// Reads the subject of a message about stream `streamKeys` (`Scripts.outboxSubject`:
    /// its meta `state`, its top entry's event as stored, whether a client read its final
    /// event, `StreamKeys.delivered`, and its at-rest mode; one script on the stream's slot).
    public func subject(_ streamKeys: StreamKeys, done: @escaping (Subject) -> Void) {
        scripts.run(Scripts.outboxSubject, keys: [streamKeys.meta, streamKeys.events, streamKeys.delivered], args: []) { [cipher] r in
            switch r {
            case .failure: done(.unknown)
            case .success(.gone): done(.gone)
            case .success(.stream(let state, let stored, let read, let atRest)):
                if state == "running" { return done(.running) }
                let mode = AtRestMode.of(metaField: atRest, haveKeys: cipher != nil)
                do throws(AtRestOpenError) {
                    done(.ended(finalEventJSON: try AtRestValue.open(stored, key: streamKeys.events, mode: mode, cipher: cipher), read: read))
                } catch {
                    done(.unreadable(error))
                }
            }
        }
    }

    /// Records that a client was written stream `streamKeys`' final event: the webhook of
    /// its answer is not sent (kept `ttlMs`, the stream's TTL).
    public func markRead(_ streamKeys: StreamKeys, ttlMs: Int) {
        connection.send(["SET", streamKeys.delivered, "1", "PX", String(ttlMs)], nil)
    }
}
