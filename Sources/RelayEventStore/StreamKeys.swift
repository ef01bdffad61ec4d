import RelayCore
import RelayRedis

/// The Redis keys of one stream (docs/DATA_MODEL.md §1). All share the hash tag
/// `{<ownerHash>:<requestId>}` (`RequestID.scoped(by:)`), so one Lua script
/// touches one Redis Cluster slot and another user's identical id names other keys.
public struct StreamKeys: Sendable, Equatable {
    /// `relay:{id}:events`: stream, entry ID `<seq>-0`, field `e` = event JSON.
    public let events: String
    /// `relay:{id}:meta`: hash `owner`, `sid`, `instance`, `state`, `created_ms`, `budget`,
    /// `prompt`; `last_seq` once the stream ended (while it runs, the top entry is the last seq).
    public let meta: String
    /// `relay:{id}:live`: pub/sub channel, payload `<seq> <event JSON>`.
    public let live: String
    /// `relay:{id}:text`: the answer's full text so far (lossless resume).
    public let text: String
    /// `relay:{id}:offsets`: u32 end offsets (bytes into `text`) per seq, big-endian at
    /// byte 4 × seq (`BITFIELD … u32 #<seq>`'s layout; written with `SETRANGE`, `OffsetRuns`).
    public let offsets: String
    /// `relay:{id}:lease`: owning instance while generating (`PX` a few seconds).
    public let lease: String
    /// `relay:{id}:cancel`: the cancel marker a `DELETE` leaves (`Scripts.requestCancel`,
    /// `PX` `EventLog.cancelMarkerMs`), read after a new generation is registered
    /// (docs/PROTOCOL.md §7, docs/DATA_MODEL.md).
    public let cancel: String
    /// `relay:{id}:answer`: the finished answer's `RetainedAnswer`, kept for
    /// `RELAY_ANSWER_RETENTION` (docs/DATA_MODEL.md §14), written by `Scripts.appendFinal`.
    public let answer: String
    /// `relay:{id}:request`: the request a takeover continues (`StoredRequest`), same
    /// lifetime as `events` (docs/DATA_MODEL.md §6.1).
    public let request: String
    /// `relay:{id}:delivered`: set when a client was written the stream's final event;
    /// such an answer gets no completion webhook (`CompletionWebhookOutbox`, docs/PROTOCOL.md §13).
    public let delivered: String

    public init(_ id: RequestID) { self.init(id.value) }

    public init(_ id: String) {
        let p = "relay:{\(id)}:"
        events = p + "events"
        meta = p + "meta"
        live = p + "live"
        text = p + "text"
        offsets = p + "offsets"
        lease = p + "lease"
        cancel = p + "cancel"
        answer = p + "answer"
        request = p + "request"
        delivered = p + "delivered"
    }

    /// The request id inside a `relay:{id}:live` channel name, if it is one.
    public static func requestID(fromLiveChannel ch: String) -> String? {
        guard ch.hasPrefix("relay:{"), ch.hasSuffix("}:live") else { return nil }
        return String(ch.dropFirst(7).dropLast(6))
    }

    /// `relay:answers:{<ownerHash>}`: sorted set of the owner's retained answers (member:
    /// the client request id, score: the record's expiry, unix ms), walked by the admin
    /// erase of a user's answers (docs/DATA_MODEL.md §14). Its own hash tag, the user's.
    public static func answerIndex(ownerHash: String) -> String { "relay:answers:{\(ownerHash)}" }

    /// Channel of session revocations (payload: session id).
    public static let revocationsChannel = "relay:revocations"
    /// Channel of cancels (payload: request id).
    public static let cancelChannel = "relay:cancel"
    /// Marker key of a revoked session.
    public static func revoked(sid: String) -> String { "relay:revoked:{\(sid)}" }
    /// The read-ticket signing key shared by every instance (docs/DATA_MODEL.md §8): 64 hex
    /// digits, created once with `SET NX`, no expiry.
    public static let readTicketKey = "relay:read-ticket-key"
}
