import RelayCore
import RelayRedis

/// The scripts of a stream's life (docs/DATA_MODEL.md §2–§5): creation, the resume read,
/// the catch-up text, the final append and the tail read after a failed append.
extension Scripts {
    /// Creates a stream unless its id is taken: meta, lease, the empty stream key, the
    /// stored request (`Lua/create.lua`; KEYS meta, lease, events, text, offsets, request).
    public static let create = LuaScript<CreateReply>(file: "create.lua", bytes: PackageResources.create_lua)

    /// The reply of `create`.
    public enum CreateReply: ScriptReply, Equatable {
        /// The stream was created (reply 1).
        case created
        /// The id is taken: its meta exists, nothing was written (reply 0).
        case idTaken

        public init(reply: RedisReply) throws(RedisFailure) {
            self = try reply.flag(of: "create.lua") ? .created : .idTaken
        }
    }

    /// Reads what a resume needs in one round trip (`Lua/open.lua`; KEYS meta, events, text).
    public static let open = LuaScript<OpenReply>(file: "open.lua", bytes: PackageResources.open_lua)

    /// The reply of `open`.
    public enum OpenReply: ScriptReply, Equatable {
        /// No meta: the stream was never created, expired, or was lost (reply nil).
        case noStream
        /// The stream's facts (reply {owner, state, last ID, first ID, sid, text length}).
        case stream(StreamInfo)

        public init(reply: RedisReply) throws(RedisFailure) {
            if reply == .null { self = .noStream; return }
            let a = try ScriptReplyArray(reply, of: "open.lua", counts: [6])
            let state = try a.optionalString(2)
            self = .stream(StreamInfo(owner: try a.string(1), state: StreamState(rawValue: state ?? ""),
                                      lastSeq: EventLog.seq(ofEntryID: try a.string(3)) ?? 0,
                                      firstRetainedSeq: EventLog.seq(ofEntryID: try a.string(4)),
                                      sid: try a.string(5), textLength: Int(try a.int(6))))
        }
    }

    /// The text and end offsets of events `from+1 … to`, for a lossless catch-up
    /// (`Lua/catchUp.lua`; KEYS text, offsets, meta; ARGV from, to, has keys).
    public static let catchUp = LuaScript<CatchUpReply>(file: "catchUp.lua", bytes: PackageResources.catchUp_lua)

    /// The reply of `catchUp`.
    public enum CatchUpReply: ScriptReply, Equatable {
        /// The text key has expired (reply nil).
        case textGone
        /// The offsets and the text around events `from+1 … to`.
        case text(CatchUpText)

        public init(reply: RedisReply) throws(RedisFailure) {
            if reply == .null { self = .textGone; return }
            let a = try ScriptReplyArray(reply, of: "catchUp.lua", counts: [5])
            let sealed = try a.int(5)
            guard sealed == 0 || sealed == 1 else { throw a.unexpected }
            self = .text(CatchUpText(start: Int(try a.int(1)), end: Int(try a.int(2)), ends: try a.bytes(3),
                                     text: try a.bytes(4), sealed: sealed == 1))
        }
    }

    /// What `catchUp` found of a stream's text.
    public struct CatchUpText: Sendable, Equatable {
        /// Event `from`'s end offset in the text, bytes (0 when `from` is 0).
        public var start: Int
        /// Event `to`'s end offset, bytes.
        public var end: Int
        /// The offsets key's 4 bytes (big-endian u32 end offset) per seq `from+1 … to` (`OffsetRuns`).
        public var ends: [UInt8]
        /// The bytes `start ..< end` of the text; when `sealed`, the whole text key (its
        /// sealed records, which the reader opens before it cuts).
        public var text: [UInt8]
        /// The stream is sealed at rest (docs/DATA_MODEL.md §15).
        public var sealed: Bool
    }

    /// Appends the final event of a generation with its checks, fence, text, retained
    /// answer and TTLs (`Lua/appendFinal.lua`; KEYS events, meta, text, offsets, answer,
    /// request). Error replies `NOSTREAM`, `FINISHED <state>`, `FINISHED taken`,
    /// `OUTOFORDER <top seq>` come back as `RedisFailure` (`RedisErrorCode`).
    public static let appendFinal = LuaScript<AppendFinalReply>(file: "appendFinal.lua", bytes: PackageResources.appendFinal_lua)

    /// The reply of `appendFinal`: the seq stored.
    public struct AppendFinalReply: ScriptReply, Equatable {
        /// The seq the final event was appended at.
        public var seq: UInt64

        public init(reply: RedisReply) throws(RedisFailure) {
            guard let n = reply.int, n >= 1 else { throw .unexpectedReply("appendFinal.lua", reply) }
            seq = UInt64(n)
        }
    }

    /// The stored tail an appender checks after a failed or ambiguous append
    /// (`Lua/appendStatus.lua`; KEYS events, meta, text, offsets).
    public static let appendStatus = LuaScript<AppendStatusReply>(file: "appendStatus.lua", bytes: PackageResources.appendStatus_lua)

    /// The reply of `appendStatus`.
    public enum AppendStatusReply: ScriptReply, Equatable {
        /// The meta hash or the stream key is gone (reply {}).
        case gone
        /// The stored tail (reply {state, top ID, entries, text end}).
        case tail(AppendStatusTail)

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "appendStatus.lua", counts: [0, 4])
            if a.count == 0 { self = .gone; return }
            let textEnd = try a.int(4)
            self = .tail(AppendStatusTail(state: try a.string(1), topSeq: EventLog.seq(ofEntryID: try a.string(2)) ?? 0,
                                          entries: EventLog.events(from: try a.element(3)),
                                          textEnd: textEnd >= 0 ? Int(textEnd) : nil))
        }
    }

    /// What `appendStatus` found of a stream that still exists.
    public struct AppendStatusTail: Sendable, Equatable {
        /// The meta's `state`, or `AppendStop.takenState` when the meta holds another
        /// ownership epoch than the caller's.
        public var state: String
        /// The seq of the top entry, 0 when the stream holds none.
        public var topSeq: UInt64
        /// The entries after the acknowledged seq (bounded), as stored (not opened).
        public var entries: [SequencedEvent]
        /// The stored end offset of the seq the text is confirmed through, bytes; `nil`
        /// when not asked or when the text key is shorter than it must be.
        public var textEnd: Int?
    }
}

/// What a resume needs to know about a stream (`Scripts.open`).
public struct StreamInfo: Sendable, Equatable {
    /// Owner (the `sub` that created it).
    public var owner: String
    /// `running`, `done`, `cancelled` or `failed` (`StreamState`); `nil` for a value
    /// this version does not know.
    public var state: StreamState?
    /// The last appended seq (0 before the first event).
    public var lastSeq: UInt64
    /// The seq of the oldest retained entry, `nil` when no entry is retained.
    public var firstRetainedSeq: UInt64?
    /// Session id that created the stream.
    public var sid: String
    /// Length of the full text kept for lossless resume, bytes (0 when off or empty).
    public var textLength: Int
}
