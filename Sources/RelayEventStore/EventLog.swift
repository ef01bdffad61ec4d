import Foundation
import RelayCore
import RelayRedis

/// The per-worker view of the Redis event log (docs/DATA_MODEL.md §2–§6): stream creation here;
/// by role, in their own files: reads for resumes (`EventLog+Reads`), the append path
/// (`EventLog+Appends`), leases and takeover (`EventLog+Ownership`), cancel markers
/// (`EventLog+Cancels`) and values sealed at rest (`EventLog+AtRest`). Confined to the worker's
/// loop thread.
public final class EventLog {
    /// Entries kept per stream at most (`XADD MAXLEN`, exact; trimmed in steps:
    /// `StreamTrim`).
    public let maxLen: Int
    /// TTL of a stream's keys, ms (`PEXPIRE`), refreshed by the appends that
    /// `TTLRefreshPolicy` marks (first, final, and one per interval).
    public let ttlMs: Int
    /// Keep the full text and per-seq offsets for lossless resume.
    public let lossless: Bool
    /// How long a finished answer's `RetainedAnswer` is kept, ms (`RELAY_ANSWER_RETENTION`;
    /// 0: none is written).
    public let retentionMs: Int
    /// The largest record body kept, bytes (`RELAY_ANSWER_RETENTION_MAX_BYTES`,
    /// `RetentionBuffer`).
    public let retentionMaxBytes: Int
    /// The retained answers' reads, index and erase, on the same connection.
    public let answers: AnswerStore
    /// The worker's command connection.
    public let connection: any RedisCommandChannel
    /// Runs the event log's Lua scripts (`EVALSHA`, `EVAL` fallback).
    public let scripts: ScriptRunner

    /// Which appends trim the stream, and to what length (`StreamTrim`).
    public let trim: StreamTrim
    /// Seals event payloads and text at rest (`RELAY_ENCRYPTION_KEYS`, docs/DATA_MODEL.md
    /// §15); `nil`: stored as plaintext. This worker's own (it owns EVP contexts).
    public let cipher: AtRestCipher?

    // Constant command arguments, formatted once instead of once per append.
    let maxLenArg: String
    let trimmedLengthArg: String
    let ttlArg: String
    let losslessArg: String
    let leaseMsArg = String(EventLog.leaseMs)
    /// `PUBLISH`, or `SPUBLISH` on a cluster (the live channel is a sharded channel).
    let publishCommand: String
    /// The lease-expiry script in use (`Scripts.expireLeaseSharded` on a cluster).
    let expireLeaseScript: LuaScript<Scripts.ExpireLeaseReply>
    /// The scripts loaded on every (re)connection (`Scripts.eventLog(sharded:)`).
    let loadedScripts: [LuaSource]
    /// The reply handler of the commands whose reply only matters when it is an error
    /// (TTLs, publish): one shared closure, no allocation per command.
    /// It reads the reply in place (`RedisReplyView`): nothing is copied. Not optional:
    /// a closure taken out of an `Optional` is re-wrapped (a thunk allocated) each time
    /// it is passed on; a placeholder until `init` can capture `self`.
    @exclusivity(unchecked) var auxiliaryReply: (RedisReplyView) -> Void = { _ in }
    /// The append path's commands are written here, one at a time, straight in RESP
    /// (`RESPCommand`: no argument array or integer strings per command).
    /// Loop thread; each command is sent before the next is started.
    let command = RESPCommand(capacity: 4096)

    /// Called with the error text of each error reply to an append's auxiliary commands
    /// (`PEXPIRE`, `PUBLISH`): their order and effect rest on the `XADD` reply, so they
    /// are only reported (the worker counts them in `/metrics`,
    /// `relay_append_auxiliary_errors_total`). Loop thread.
    @exclusivity(unchecked) public var onAuxiliaryFailure: ((String) -> Void)?
    /// Counts (re)connections: an appender that sees it change verifies the stored tail
    /// before sending more (a restart or failover may have lost acknowledged events).
    /// Read on every append; loop-thread confined, so not checked for exclusivity at run time.
    @exclusivity(unchecked) public internal(set) var connectionEpoch = 0

    /// - Parameters:
    ///   - settings: entries kept, TTL, lossless resume, retention (`EventStoreSettings`).
    ///   - sharded: publish live events with `SPUBLISH` (Redis Cluster: the live channel is a
    ///     sharded channel, subscribed with `ShardedPubSub`).
    ///   - cipher: seals what is stored at rest (docs/DATA_MODEL.md §15); `nil`: plaintext.
    public init(connection: any RedisCommandChannel, settings: EventStoreSettings, sharded: Bool = false,
                cipher: AtRestCipher? = nil) {
        let maxLen = settings.maxLen, ttlMs = settings.ttlMs, lossless = settings.lossless
        self.retentionMs = settings.retentionMs
        self.retentionMaxBytes = settings.retentionMaxBytes
        self.cipher = cipher
        self.answers = AnswerStore(connection: connection)
        answers.cipher = cipher
        expireLeaseScript = sharded ? Scripts.expireLeaseSharded : Scripts.expireLease
        loadedScripts = Scripts.eventLog(sharded: sharded)
        publishCommand = sharded ? "SPUBLISH" : "PUBLISH"
        self.connection = connection
        self.maxLenArg = String(maxLen)
        self.trim = StreamTrim(maxLen: maxLen)
        self.trimmedLengthArg = String(trim.trimmedLength)
        self.ttlArg = String(ttlMs)
        self.losslessArg = lossless ? "1" : "0"
        self.scripts = ScriptRunner(connection: connection)
        self.maxLen = maxLen
        self.ttlMs = ttlMs
        self.lossless = lossless
        auxiliaryReply = { [unowned self] r in
            if let e = r.errorMessage { self.onAuxiliaryFailure?(e) }
        }
    }

    /// Loads the scripts, and `others` that share this connection's script runner (the
    /// budget ledger's); call after each (re)connection. A script not loaded yet still runs
    /// (`ScriptRunner`: `EVALSHA`, then `EVAL` on `NOSCRIPT`).
    public func connected(alsoLoading others: [LuaSource] = []) {
        connectionEpoch &+= 1
        scripts.load(loadedScripts + others)
    }

    /// Creates the stream (meta hash and an empty stream key, `Scripts.create`) unless
    /// the id is taken, and takes the lease.
    /// `budgetKey` and `promptEstimate` (tokens) are kept in the meta for a settlement
    /// by another instance. `request`: the `StoredRequest` a takeover continues (nil: the
    /// stream cannot be taken over). `done(.success(true))` when created, `false` when it already existed.
    public func create(_ id: RequestID, owner: String, sid: String, instance: String, nowMs: UInt64,
                       budgetKey: String, promptEstimate: Int, request: StoredRequest? = nil,
                       done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(Scripts.create, keys: [k.meta, k.lease, k.events, k.text, k.offsets, k.request],
                    args: [owner, sid, instance, String(nowMs), String(ttlMs), String(EventLog.leaseMs),
                           budgetKey, String(promptEstimate), maxLenArg, request.map { sealedRequest($0, k) } ?? "",
                           newStreamMode.rawValue]) { r in
            done(r.map { $0 == .created })
        }
    }

    /// The per-event command heads of a stream (`StreamCommands`): made once per
    /// appender, since its keys and this log's publish command do not change.
    public func commands(for k: StreamKeys) -> StreamCommands {
        StreamCommands(keys: k, xaddHead: RESPArguments(["XADD", k.events, "NOMKSTREAM"]),
                       publishHead: RESPArguments([publishCommand, k.live]))
    }

    /// Gives a created id back when its request was refused after `create` (nothing
    /// was generated under it): `DEL` of its meta hash and lease (Redis `DEL` doc).
    public func discard(_ id: RequestID) {
        let k = StreamKeys(id)
        connection.send(["DEL", k.meta, k.lease], nil)
    }

    /// Parses a stream entry ID `<seq>-0` into its seq.
    public static func seq(ofEntryID id: String) -> UInt64? {
        guard let dash = id.firstIndex(of: "-") else { return nil }
        return UInt64(id[..<dash])
    }

    /// Converts an `XRANGE` reply into events (entries without an `e` field are skipped).
    static func events(from r: RedisReply) -> [SequencedEvent] {
        guard let entries = r.array else { return [] }
        var out: [SequencedEvent] = []
        out.reserveCapacity(entries.count)
        for entry in entries {
            guard let pair = entry.array, pair.count == 2, let id = pair[0].string,
                  let seq = seq(ofEntryID: id), let fields = pair[1].array else { continue }
            var i = 0
            while i + 1 < fields.count {
                if fields[i].string == "e", let json = fields[i + 1].string {
                    out.append(SequencedEvent(seq: seq, json: json))
                    break
                }
                i += 2
            }
        }
        return out
    }
}
