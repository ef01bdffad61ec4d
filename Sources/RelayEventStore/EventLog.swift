import Foundation
import RelayCore
import RelayRedis

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

/// The per-worker view of the Redis event log (docs/DATA_MODEL.md §2–§5): stream creation, appends,
/// resume checks, replays, and lossless catch-ups. Confined to the worker's loop thread.
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

    /// The mode this relay creates streams in (`AtRestMode.forNewStreams`): sealed when it
    /// has keys.
    public var newStreamMode: AtRestMode { AtRestMode.forNewStreams(haveKeys: cipher != nil) }

    /// What seals a stream's values in `mode`: the cipher in a sealed stream (`nil` when
    /// this relay has no keys: it cannot write one), `nil` in a plain one.
    public func sealer(_ mode: AtRestMode) -> AtRestCipher? { mode == .sealed ? cipher : nil }

    /// A stream's mode as its meta's `atrest` field says (`AtRestMode.of`).
    func mode(metaField: String?) -> AtRestMode { AtRestMode.of(metaField: metaField, haveKeys: cipher != nil) }

    // Constant command arguments, formatted once instead of once per append.
    private let maxLenArg: String
    private let trimmedLengthArg: String
    private let ttlArg: String
    private let losslessArg: String
    private let leaseMsArg = String(EventLog.leaseMs)
    /// `PUBLISH`, or `SPUBLISH` on a cluster (the live channel is a sharded channel).
    private let publishCommand: String
    /// The lease-expiry script in use (`SPUBLISH` variant on a cluster).
    private let expireLeaseScript: String
    /// The reply handler of the commands whose reply only matters when it is an error
    /// (TTLs, publish): one shared closure, no allocation per command.
    /// It reads the reply in place (`RedisReplyView`): nothing is copied. Not optional:
    /// a closure taken out of an `Optional` is re-wrapped (a thunk allocated) each time
    /// it is passed on; a placeholder until `init` can capture `self`.
    @exclusivity(unchecked) private var auxiliaryReply: (RedisReplyView) -> Void = { _ in }
    /// The append path's commands are written here, one at a time, straight in RESP
    /// (`RESPCommand`: no argument array or integer strings per command).
    /// Loop thread; each command is sent before the next is started.
    private let command = RESPCommand(capacity: 4096)

    /// Called with the error text of each error reply to an append's auxiliary commands
    /// (`PEXPIRE`, `PUBLISH`): their order and effect rest on the `XADD` reply, so they
    /// are only reported (the worker counts them in `/metrics`,
    /// `relay_append_auxiliary_errors_total`). Loop thread.
    @exclusivity(unchecked) public var onAuxiliaryFailure: ((String) -> Void)?
    /// Counts (re)connections: an appender that sees it change verifies the stored tail
    /// before sending more (a restart or failover may have lost acknowledged events).
    /// Read on every append; loop-thread confined, so not checked for exclusivity at run time.
    @exclusivity(unchecked) public private(set) var connectionEpoch = 0

    /// - Parameter sharded: publish live events with `SPUBLISH` (Redis Cluster: the
    ///   live channel is a sharded channel, subscribed with `ShardedPubSub`).
    /// - Parameter cipher: seals what is stored at rest (docs/DATA_MODEL.md §15); `nil`: plaintext.
    ///   - retentionMs: `RELAY_ANSWER_RETENTION`, ms (0: finished answers are not kept).
    ///   - retentionMaxBytes: `RELAY_ANSWER_RETENTION_MAX_BYTES`, bytes.
    public init(connection: any RedisCommandChannel, maxLen: Int, ttlMs: Int, lossless: Bool, sharded: Bool = false,
                retentionMs: Int = 0, retentionMaxBytes: Int = 1 << 20, cipher: AtRestCipher? = nil) {
        self.cipher = cipher
        self.retentionMs = retentionMs
        self.retentionMaxBytes = retentionMaxBytes
        self.answers = AnswerStore(connection: connection)
        answers.cipher = cipher
        expireLeaseScript = sharded ? Scripts.expireLeaseSharded : Scripts.expireLease
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
    public func connected(alsoLoading others: [String] = []) {
        connectionEpoch &+= 1
        scripts.load([Scripts.create, Scripts.appendFinal, Scripts.appendStatus, Scripts.open, Scripts.catchUp,
                      expireLeaseScript, Scripts.admit, Scripts.requestCancel, Scripts.takeover, Scripts.appendFenced,
                      Scripts.releaseLease, Scripts.refreshLease, Scripts.heartbeat, Scripts.removeLapsedInstance] + others)
    }

    /// Owner lease of a running generation, ms (`relay:{id}:lease` `PX`); refreshed
    /// every `leaseMs / 3`.
    public static let leaseMs = 3_000

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
            if let f = r.failure { return done(.failure(f)) }
            done(.success(r.int == 1))
        }
    }

    /// Lifetime of a cancel marker, ms (`StreamKeys.cancel`): how long a `DELETE` that came
    /// before its stream still stops the stream once created (docs/PROTOCOL.md §7).
    public static let cancelMarkerMs = 60_000

    /// What `requestCancel` found.
    public enum CancelRequest: Sendable, Equatable {
        /// No stream of the id exists (yet): the marker was left.
        case pending
        /// The caller's stream, in this state (`running`: the marker was left too; the
        /// caller publishes the cancel). `nil` for a state this version does not know.
        case stream(StreamState?)
        /// The id names another owner's stream (nothing written).
        case otherOwner
    }

    /// A `DELETE` of stream `id` by `owner` (`Scripts.requestCancel`): leaves the cancel
    /// marker for `cancelMarkerMs` unless the stream exists and has ended.
    public func requestCancel(_ id: RequestID, owner: String, done: @escaping (Result<CancelRequest, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(Scripts.requestCancel, keys: [k.meta, k.cancel], args: [owner, String(EventLog.cancelMarkerMs)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            switch r.string ?? "" {
            case "pending": done(.success(.pending))
            case "other": done(.success(.otherOwner))
            case let state: done(.success(.stream(StreamState(rawValue: state))))
            }
        }
    }

    /// Whether a `DELETE` left the cancel marker of stream `id` (`EXISTS`): read once the
    /// stream's generation is registered, before its upstream is started.
    public func isCancelRequested(_ id: RequestID, done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        connection.send(["EXISTS", StreamKeys(id).cancel]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success((r.int ?? 0) > 0))
        }
    }

    /// Reads a stream's resume facts; `nil` when it does not exist (or expired).
    public func open(_ id: RequestID, done: @escaping (Result<StreamInfo?, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(Scripts.open, keys: [k.meta, k.events, k.text], args: []) { r in
            if let f = r.failure { return done(.failure(f)) }
            guard let a = r.array, a.count >= 6 else { return done(.success(nil)) }
            let fid = a[3].string ?? ""
            done(.success(StreamInfo(owner: a[0].string ?? "", state: StreamState(rawValue: a[1].string ?? ""),
                                     lastSeq: EventLog.seq(ofEntryID: a[2].string ?? "") ?? 0,
                                     firstRetainedSeq: EventLog.seq(ofEntryID: fid),
                                     sid: a[4].string ?? "", textLength: Int(a[5].int ?? 0))))
        }
    }

    /// Reads the retained events after `seq`: `XRANGE key (<seq>-0 +` (Redis `XRANGE`
    /// doc, exclusive range), in seq order.
    public func range(_ id: RequestID, after seq: UInt64, done: @escaping (Result<[SequencedEvent], RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        // The stream's mode first (same slot, pipelined): every entry is read by it.
        var mode: AtRestMode?
        connection.send(["HGET", k.meta, AtRestMode.metaField]) { [self] r in mode = self.mode(metaField: r.string) }
        connection.send(["XRANGE", k.events, "(\(seq)-0", "+"]) { [self, cipher] r in
            if let f = r.failure { return done(.failure(f)) }
            done(EventLog.opened(EventLog.events(from: r), key: k.events, mode: mode ?? self.mode(metaField: nil), cipher: cipher))
        }
    }

    /// The text between the end of event `from` and the end of event `to`, bytes, for
    /// a lossless catch-up; `nil` when the text has expired.
    public func catchUp(_ id: RequestID, from: UInt64, to: UInt64, done: @escaping (Result<String?, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(Scripts.catchUp, keys: [k.text, k.offsets, k.meta], args: [String(from), String(to), cipher != nil ? "1" : "0"]) { [cipher] r in
            if let f = r.failure { return done(.failure(f)) }
            guard let a = r.array, a.count >= 2 else { return done(.success(nil)) }
            guard a.count == 3, case .bulk(let whole) = a[2] else {
                return done(.success(a[1].string ?? ""))
            }
            // Sealed: the whole text key came back (its records); open them and cut.
            let start = Int(a[0].int ?? 0), end = Int(a[1].int ?? 0)
            do {
                let plain = try EventLog.openText(whole, key: k, mode: .sealed, cipher: cipher)
                guard end >= start, end <= plain.count else {
                    return done(.failure(EventLog.unreadable("\(k.text): its records hold \(plain.count) bytes, offsets ask for \(start)..<\(end)")))
                }
                done(.success(String(decoding: plain[start..<end], as: UTF8.self)))
            } catch {
                done(.failure(EventLog.unreadable("\(error)")))
            }
        }
    }

    /// Sends one non-final append as plain pipelined commands, no per-event script
    /// (docs/DATA_MODEL.md §5):
    /// 1. `XADD events NOMKSTREAM [MAXLEN <trim.trimmedLength>] <seq>-0 e <json>`; the
    ///    exact trim only on the seqs `StreamTrim` picks, so the stream never holds more
    ///    than `maxLen` entries. A nil reply (the stream is gone) is reported as
    ///    `NOSTREAM`; a refused ID as `RedisErrorCode.entryIDRefused`.
    /// 2. when `refreshTTL`: `PEXPIRE` of every key of the stream.
    /// The event's lossless-resume text is not written here: the appender writes it
    /// once per group of events (`writeText`, `TextCheckpoint`).
    /// `reply` gets the `XADD`'s reply, read in place (`appendOutcome` turns it into the
    /// outcome; one closure per event, the caller's); the `PEXPIRE` replies are only
    /// counted (`onAuxiliaryFailure`). The caller publishes after a success (`publish`).
    /// `stored`: the event as stored (`storedForm`), when the caller made it already (the
    /// appender seals each event once for its entry and its live message).
    public func append(_ s: StreamCommands, seq: UInt64, json: String, refreshTTL: Bool, stored: String? = nil,
                       reply: @escaping (RedisReplyView) -> Void) {
        let trims = trim.trims(seq: seq)
        let c = command
        c.start(argumentCount: trims ? 8 : 6)
        c.add(s.xaddHead)   // XADD <events> NOMKSTREAM
        if trims {
            c.add(constant: "MAXLEN")
            c.add(trimmedLengthArg)
        }
        c.add(entryID: seq)
        c.add(constant: "e")
        c.add(stored ?? storedForm(json, s.keys))
        connection.send(c, view: reply)
        if refreshTTL { refreshTTLs(s.keys) }
    }

    /// `append(_:seq:json:refreshTTL:reply:)` for keys whose command heads were not made
    /// (`commands(for:)` once per call: for tools and tests, not the per-event path).
    public func append(_ k: StreamKeys, seq: UInt64, json: String, refreshTTL: Bool,
                       reply: @escaping (RedisReplyView) -> Void) {
        append(commands(for: k), seq: seq, json: json, refreshTTL: refreshTTL, reply: reply)
    }

    /// An event as it is stored in the stream's entry and live message: sealed under the
    /// events key's name with the cipher (docs/DATA_MODEL.md §15), else the JSON itself.
    /// `mode`: the stream's (`nil`: `newStreamMode`).
    public func storedForm(_ json: String, _ k: StreamKeys, mode: AtRestMode? = nil) -> String {
        guard let cipher = sealer(mode ?? newStreamMode) else { return json }
        return cipher.seal(json, aad: k.events)
    }

    /// A stream's `StoredRequest` as stored: sealed under the request key's name with the
    /// cipher (docs/DATA_MODEL.md §15), else its encoding as it is.
    func sealedRequest(_ request: StoredRequest, _ k: StreamKeys) -> String {
        let encoded = request.encoded()
        guard let cipher else { return encoded }
        return cipher.seal(encoded, aad: k.request)
    }

    /// The per-event command heads of a stream (`StreamCommands`): made once per
    /// appender, since its keys and this log's publish command do not change.
    public func commands(for k: StreamKeys) -> StreamCommands {
        StreamCommands(keys: k, xaddHead: RESPArguments(["XADD", k.events, "NOMKSTREAM"]),
                       publishHead: RESPArguments([publishCommand, k.live]))
    }

    /// The outcome of an append's `XADD` reply: an error reply as its text, a nil reply
    /// (`XADD … NOMKSTREAM` on a missing key) as `NOSTREAM`, else stored.
    public static func appendOutcome(_ r: RedisReplyView) -> Result<Void, RedisFailure> {
        if let f = r.failure { return .failure(f) }
        if r.isNull { return .failure(.noStream("stream expired (XADD NOMKSTREAM)")) }
        return .success(())
    }

    /// Writes buffered lossless-resume text (`TextCheckpoint.Write`): `SETRANGE text
    /// <start> <text>` (skipped when empty) and `SETRANGE offsets <4 × first seq>
    /// <4 bytes per event>` (each event's end offset, bytes, big-endian: the layout of
    /// `BITFIELD … u32 #<seq>`, which `Scripts.catchUp` reads; one per run of consecutive
    /// seqs, `OffsetRuns`). Both are positional, so a resend stores the same bytes. Then
    /// `PEXPIRE` of both keys, with every write: any write may create them (`SETRANGE`
    /// re-creates a key that was evicted, deleted or lost with a restart mid-stream, at
    /// any offset, without a TTL), and a key that outlives its stream is never cleaned
    /// up. `done` gets `.success` when every `SETRANGE` was answered without an error.
    /// `mode`: the stream's (`nil`: `newStreamMode`).
    public func writeText(_ k: StreamKeys, _ w: TextCheckpoint.Write, mode: AtRestMode? = nil,
                          done: @escaping (Result<Void, RedisFailure>) -> Void) {
        let runs = OffsetRuns.runs(w.offsets)
        let replies = (w.text.isEmpty ? 0 : 1) + runs.count
        guard replies > 0 else { return done(.success(())) }
        let outcome = TextWriteOutcome(replies: replies, done: done)
        // Whole events' UTF-8 for the text; binary bytes for the offsets, passed as they
        // are (`RedisConnection` hands the RESP to hiredis; `ClusterClient` keeps the
        // encoded command for resends).
        if !w.text.isEmpty {
            if let cipher = sealer(mode ?? newStreamMode) {
                // One sealed record per write, after the confirmed ones (`TextCheckpoint`).
                let record = cipher.seal(w.text, aad: EventLog.textAAD(k, start: w.start))
                setRange(k.text, at: w.storedStart, Array(record.utf8)) { r in outcome.replied(r) }
            } else {
                setRange(k.text, at: w.start, w.text) { r in outcome.replied(r) }
            }
        }
        for run in runs { setRange(k.offsets, at: run.byteOffset, run.bytes) { r in outcome.replied(r) } }
        expire(k.text)
        expire(k.offsets)
    }

    /// `SETRANGE <key> <offset> <bytes>` (offset in bytes; Redis zero-pads a key shorter
    /// than it).
    private func setRange(_ key: String, at offset: Int, _ bytes: [UInt8], view: @escaping (RedisReplyView) -> Void) {
        let c = command
        c.start(argumentCount: 4)
        c.add(constant: "SETRANGE")
        c.add(key)
        c.add(offset)
        bytes.withUnsafeBufferPointer { c.add(bytes: $0) }
        connection.send(c, view: view)
    }

    /// `PEXPIRE <key> <ttlMs>`, its reply only counted when an error (`auxiliaryReply`).
    private func expire(_ key: String) {
        let c = command
        c.start(argumentCount: 3)
        c.add(constant: "PEXPIRE")
        c.add(key)
        c.add(ttlArg)
        connection.send(c, view: auxiliaryReply)
    }

    /// `PEXPIRE` of every key of a stream (`ttlMs`).
    private func refreshTTLs(_ k: StreamKeys) {
        expire(k.events)
        expire(k.meta)
        expire(k.request)
        if lossless {
            expire(k.text)
            expire(k.offsets)
        }
    }

    /// Sends the final event of a generation (`Scripts.appendFinal`: checks, `XADD`,
    /// fence, the buffered text and offsets, `state`/`last_seq`, TTLs). `finalState`:
    /// `done`, `cancelled` or `failed`. `text`: every event's text not yet confirmed
    /// written, the final event's own included (`TextCheckpoint.pending`); `nil` when
    /// none (or lossless resume is off). The caller publishes after `done` succeeds.
    /// `record`: the answer's `RetainedAnswer` value, kept for `retentionMs` (`nil`: none).
    /// `stored`: the event as stored (`storedForm`; made here when `nil`). `epoch`: the
    /// writer's ownership epoch (0: the stream's creator; `takeover`).
    public func appendFinal(_ k: StreamKeys, seq: UInt64, json: String, finalState: StreamState,
                            text: TextCheckpoint.Write?, record: [UInt8]? = nil, stored: String? = nil, epoch: UInt64 = 0,
                            mode: AtRestMode? = nil, done: @escaping (Result<Void, RedisFailure>) -> Void) {
        let sealer = sealer(mode ?? newStreamMode)
        var args = [String(seq), stored ?? storedForm(json, k, mode: mode), maxLenArg, ttlArg, finalState.rawValue, losslessArg,
                    record.map { String(decoding: $0, as: UTF8.self) } ?? "", String(retentionMs),   // the record is UTF-8
                    String(epoch)]
        if lossless, let w = text {
            if let sealer, !w.text.isEmpty {
                args += [String(w.storedStart), sealer.seal(w.text, aad: EventLog.textAAD(k, start: w.start))]
            } else {
                args += [String(w.storedStart), String(decoding: w.text, as: UTF8.self)]   // whole strings' bytes: valid UTF-8
            }
            args.reserveCapacity(args.count + 2 * w.offsets.count)
            for o in w.offsets { args += [String(o.seq), String(o.end)] }
        }
        scripts.run(Scripts.appendFinal, keys: [k.events, k.meta, k.text, k.offsets, k.answer, k.request], args: args,
                    retryNoScript: false) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success(()))
        }
    }

    /// Publishes an acknowledged event on the stream's live channel: `PUBLISH` (or
    /// `SPUBLISH` on a cluster) `relay:{id}:live "<seq> <json>"` (`LivePayload`).
    /// `then`: runs once Redis answered it (the generation's last event: the process
    /// may exit right after its generation ended, e.g. a drain, and must not leave the
    /// publish unsent in the connection's output buffer). `then` gets the reply as it
    /// is: an error reply is not counted here, `then` reports it (`auxiliaryReplied`,
    /// as `StreamAppender` does). Pass a closure made once, not one per event (the
    /// queue drains after most events of a steady stream).
    public func publish(_ s: StreamCommands, seq: UInt64, json: String, stored: String? = nil, then: @escaping (RedisReplyView) -> Void) {
        connection.send(publishing(s, seq: seq, json: json, stored: stored), view: then)
    }

    /// `publish(_:seq:json:then:)` without a `then`: the reply is only counted when an error.
    public func publish(_ s: StreamCommands, seq: UInt64, json: String, stored: String? = nil) {
        connection.send(publishing(s, seq: seq, json: json, stored: stored), view: auxiliaryReply)
    }

    /// `publish(_:seq:json:)` for keys whose command heads were not made (tools, tests).
    public func publish(_ k: StreamKeys, seq: UInt64, json: String) {
        publish(commands(for: k), seq: seq, json: json)
    }

    /// The `PUBLISH` of an event, in `command`; its payload is
    /// `LivePayload.message(seq:json:)`, written in place.
    private func publishing(_ s: StreamCommands, seq: UInt64, json: String, stored: String?) -> RESPCommand {
        let c = command
        c.start(argumentCount: 3)
        c.add(s.publishHead)   // PUBLISH <live>
        c.add(seq: seq, space: stored ?? storedForm(json, s.keys))
        return c
    }

    /// Reports an auxiliary command's error reply (`onAuxiliaryFailure`), for a reply
    /// handler given to `publish(then:)`.
    public func auxiliaryReplied(_ r: RedisReplyView) {
        if let e = r.errorMessage { onAuxiliaryFailure?(e) }
    }

    /// Reads the stored tail after `ackedSeq` (`Scripts.appendStatus`, at most `count`
    /// entries): `state` nil when the stream is gone. `textThrough`: the seq whose
    /// lossless-resume text is confirmed stored (0: none); its stored end offset comes
    /// back as `StoredTail.textEnd`.
    /// `epoch`: the caller's ownership epoch: the state reads `taken` when another
    /// instance holds a newer one (`Scripts.takeover`). `textStoredEnd`: the `text` key's
    /// confirmed length as stored (`TextCheckpoint.confirmedStoredEnd`), which it must
    /// reach; `nil`: that seq's end offset (plain text).
    public func appendStatus(_ k: StreamKeys, after ackedSeq: UInt64, count: Int, textThrough: UInt64 = 0, epoch: UInt64 = 0,
                             textStoredEnd: Int? = nil, mode: AtRestMode? = nil,
                             done: @escaping (Result<StoredTail, RedisFailure>) -> Void) {
        let mode = mode ?? newStreamMode
        var args = [String(ackedSeq), String(count), String(textThrough), String(epoch)]
        if let textStoredEnd { args.append(String(textStoredEnd)) }
        scripts.run(Scripts.appendStatus, keys: [k.events, k.meta, k.text, k.offsets], args: args) { [cipher] r in
            if let f = r.failure { return done(.failure(f)) }
            guard let a = r.array, a.count == 4 else { return done(.success(StoredTail(state: nil, topSeq: 0, entries: []))) }
            let textEnd = a[3].int ?? -1
            let entries: [SequencedEvent]
            switch EventLog.opened(EventLog.events(from: a[2]), key: k.events, mode: mode, cipher: cipher) {
            case .success(let e): entries = e
            case .failure(let f): return done(.failure(f))
            }
            done(.success(StoredTail(state: a[0].string, topSeq: EventLog.seq(ofEntryID: a[1].string ?? "") ?? 0,
                                     entries: entries,
                                     textEnd: textThrough > 0 && textEnd >= 0 ? Int(textEnd) : nil)))
        }
    }

    /// Deletes the text and offsets of a stream found gone (its pipelined `SETRANGE`s
    /// may have re-created them without a TTL).
    public func discardText(_ k: StreamKeys) {
        guard lossless else { return }
        connection.send(["DEL", k.text, k.offsets], view: auxiliaryReply)
    }

    /// What a lease refresh found (`Scripts.refreshLease`).
    public enum LeaseRefresh: Sendable, Equatable {
        /// Refreshed: the caller still owns the stream.
        case held
        /// The stream no longer runs (ended, or gone from Redis).
        case notRunning
        /// Another instance took the stream over (a newer ownership epoch).
        case takenOver
    }

    /// Refreshes the owner lease of a running generation (`Scripts.refreshLease`): only
    /// while `epoch` is the stream's ownership epoch and the lease is this instance's or
    /// unclaimed. Runs for every running generation every `leaseMs / 3`. `done` is not
    /// called when Redis failed (the next round tries again).
    public func refreshLease(_ k: StreamKeys, instance: String, epoch: UInt64, done: @escaping (LeaseRefresh) -> Void) {
        scripts.run(Scripts.refreshLease, keys: [k.lease, k.meta], args: [instance, leaseMsArg, String(epoch)]) { r in
            guard r.failure == nil, let v = r.int else { return }
            done(v == 1 ? .held : v < 0 ? .takenOver : .notRunning)
        }
    }

    /// Gives a created id back when its request was refused after `create` (nothing
    /// was generated under it): `DEL` of its meta hash and lease (Redis `DEL` doc).
    public func discard(_ id: RequestID) {
        let k = StreamKeys(id)
        connection.send(["DEL", k.meta, k.lease], nil)
    }

    /// Asks the owning instance, wherever it is, to stop generating `id`:
    /// `PUBLISH relay:cancel <id>` (docs/DATA_MODEL.md §7).
    public func publishCancel(_ id: RequestID, done: @escaping (Result<Void, RedisFailure>) -> Void) {
        connection.send(["PUBLISH", StreamKeys.cancelChannel, id.value]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success(()))
        }
    }

    /// Releases the lease of a finished generation: only while it names `instance`
    /// (`Scripts.releaseLease`), so a lapsed owner never frees the lease of the instance
    /// that took its stream over.
    public func releaseLease(_ id: RequestID, instance: String) {
        scripts.run(Scripts.releaseLease, keys: [StreamKeys(id).lease], args: [instance]) { _ in }
    }

    /// Ends this instance's lease at once (`DEL`), so another instance takes the stream
    /// over (drain hand-over, docs/PROTOCOL.md §4).
    public func dropLease(_ id: RequestID) {
        connection.send(["DEL", StreamKeys(id).lease], nil)
    }

    /// What `takeover` found (`Scripts.takeover`).
    public enum Takeover: Sendable, Equatable {
        /// The stream no longer exists.
        case vanished
        /// Nothing to do: its lease is held.
        case ownerAlive
        /// It has ended already (`done`, `cancelled` or `failed`): nothing to continue, but
        /// an owner that died right after its final append may not have settled it.
        case ended(EndedStream)
        /// It cannot be continued (limit reached, no stored request, text not rebuildable):
        /// end it with `expireLease`.
        case notContinuable
        /// Taken over: this instance owns it under `epoch`; continue after `topSeq`.
        case taken(TakenStream)
    }

    /// A stream found ended by `takeover`: what settling it again (idempotent per id,
    /// `BudgetLedger.settle`) needs.
    public struct EndedStream: Sendable, Equatable {
        /// `done`, `cancelled` or `failed`.
        public var state: String
        /// The budget hash charged (empty: none).
        public var budgetKey: String
        /// Prompt tokens charged (the meta's `prompt`, re-sent prompts included).
        public var prompt: Int
        /// The final event's seq.
        public var lastSeq: UInt64
        /// The final event (opened), or `nil` when it was not readable.
        public var finalEvent: StreamEvent?
    }

    /// A stream this instance took over: what its continuation needs.
    public struct TakenStream: Sendable, Equatable {
        /// The new ownership epoch (≥ 1): every append passes it.
        public var epoch: UInt64
        /// The last stored seq: the continuation appends from `topSeq + 1`.
        public var topSeq: UInt64
        /// The stored request bytes (`StoredRequest.decode`).
        public var request: String
        /// The text of the events before the oldest retained entry (from the lossless-resume
        /// text key; empty when every event is retained).
        public var prefix: String
        /// The text of each retained event after `prefix`, seqs `topSeq - count + 1 … topSeq`.
        public var retainedTexts: [String]
        /// The answer's text so far (every stored `delta`, concatenated).
        public var text: String { prefix + retainedTexts.joined() }
        /// `delta` events stored so far (one completion token each; a running stream holds
        /// no other kind).
        public var deltas: Int { Int(topSeq) }
        /// Continuations of this stream, this one included.
        public var continuations: Int
        /// The stream's owner (`sub`) and session id (the meta's).
        public var owner: String
        public var sid: String
        /// Prompt tokens charged so far (the meta's `prompt`): the first call's estimate
        /// plus each earlier continuation's re-sent prompt (`addPromptCharge`).
        public var priorPrompt: Int
        /// With text sealed at rest: the `text` key's length as stored (its records hold
        /// `prefix`); `nil` for plain text.
        public var textStoredEnd: Int? = nil
        /// Each stored delta's length, bytes, seqs 1…`topSeq` (for the retained answer,
        /// `StreamAppender.seedRetention`); `nil` when the offsets were not kept.
        public var deltaLengths: [Int]? = nil
        /// How the stream's values are stored (the meta's `atrest`): the continuation
        /// writes in the mode the stream was created in, whatever this relay's keys.
        public var mode: AtRestMode = .plain
    }

    /// Takes over stream `id` when its owner lease lapsed and it may be continued
    /// (`Scripts.takeover`, at most `maxContinuations` times per stream).
    public func takeover(_ id: RequestID, instance: String, maxContinuations: Int,
                         done: @escaping (Result<Takeover, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(Scripts.takeover, keys: [k.events, k.meta, k.lease, k.text, k.offsets, k.request],
                    args: [instance, String(EventLog.leaseMs), String(maxContinuations), ttlArg, losslessArg,
                           cipher != nil ? "1" : "0"]) { [self, cipher] r in
            if let f = r.failure { return done(.failure(f)) }
            let a = r.array ?? []
            switch a.first?.int ?? 0 {
            case -1: return done(.success(.vanished))
            case -2: return done(.success(.notContinuable))
            case 3:
                guard a.count >= 6 else { return done(.success(.ownerAlive)) }
                let mode = self.mode(metaField: a.count > 6 ? a[6].string : nil)
                let final = (try? EventLog.opened(EventLog.events(from: a[5]), key: k.events, mode: mode, cipher: cipher).get())?.last
                return done(.success(.ended(EndedStream(state: a[1].string ?? "", budgetKey: a[2].string ?? "",
                                                        prompt: Int(a[3].string ?? "0") ?? 0,
                                                        lastSeq: UInt64(a[4].string ?? "0") ?? 0,
                                                        finalEvent: final.flatMap { try? StreamEvent(jsonData: Data($0.json.utf8)) }))))
            case 1: break
            default: return done(.success(.ownerAlive))
            }
            guard a.count >= 13 else { return done(.success(.notContinuable)) }
            done(EventLog.taken(a, keys: k, mode: self.mode(metaField: a[12].string), cipher: cipher).map { .taken($0) })
        }
    }

    /// Decodes the reply of `Scripts.takeover` (1, epoch, top, request, prefix, entries,
    /// continuations, owner, sid, prompt, offsets, whole sealed text): opens what is sealed
    /// at rest and finds, with sealed text, the seq its records end at (the text after it
    /// is in the retained entries). A value that does not open, or text that does not
    /// meet the entries, fails with `UNREADABLE`.
    static func taken(_ a: [RedisReply], keys k: StreamKeys, mode: AtRestMode, cipher: AtRestCipher?) -> Result<TakenStream, RedisFailure> {
        let top = UInt64(max(0, a[2].int ?? 0))
        let offsets: [UInt8]
        if case .bulk(let o) = a[10] { offsets = o } else { offsets = [] }
        func offset(_ seq: UInt64) -> Int? {
            let i = Int(seq) * 4
            guard seq > 0, i + 4 <= offsets.count else { return seq == 0 ? 0 : nil }
            return offsets[i..<i + 4].reduce(0) { $0 << 8 | Int($1) }
        }
        let entries: [SequencedEvent]
        switch EventLog.opened(EventLog.events(from: a[5]), key: k.events, mode: mode, cipher: cipher) {
        case .success(let e): entries = e
        case .failure(let f): return .failure(f)
        }
        let request: String
        do { request = try AtRestValue.open(a[3].string ?? "", key: k.request, mode: mode, cipher: cipher) } catch {
            return .failure(unreadable(error.description))
        }
        // Plain text: the script cut the text before the oldest retained entry. Sealed: the
        // whole text key came back; its records end at an event whose end offset is their
        // plaintext length.
        var prefix = a[4].string ?? ""
        var textThrough = (entries.first?.seq ?? top + 1) - 1
        var storedEnd: Int?
        if case .bulk(let whole) = a[11], !whole.isEmpty {
            let plain: [UInt8]
            do { plain = try EventLog.openText(whole, key: k, mode: mode, cipher: cipher) } catch {
                return .failure(unreadable("\(error)"))
            }
            var through: UInt64? = plain.isEmpty ? 0 : nil
            var seq = top
            while through == nil && seq > 0 {
                if offset(seq) == plain.count { through = seq }
                seq -= 1
            }
            guard let t = through, t + 1 >= (entries.first?.seq ?? t + 1) else {
                return .failure(unreadable("\(k.text): its records (\(plain.count) bytes) do not end where a retained entry begins"))
            }
            prefix = String(decoding: plain, as: UTF8.self)
            textThrough = t
            storedEnd = whole.count
        }
        var texts: [String] = []
        for e in entries where e.seq > textThrough {
            guard case .delta(let t)? = try? StreamEvent(jsonData: Data(e.json.utf8)) else {
                return .failure(RedisFailure(code: .other("UNREADABLE"), message: "entry \(e.seq) of a running stream is not a delta"))
            }
            texts.append(t)
        }
        guard textThrough + UInt64(texts.count) == top else {
            return .failure(unreadable("\(k.events): entries \(textThrough + 1)…\(top) are not all retained"))
        }
        // Each delta's length (bytes), for the retained answer: from the offsets before the
        // retained texts, then the texts themselves; `nil` when the offsets are not there.
        var lengths: [Int]? = []
        var previous = 0
        for seq in stride(from: UInt64(1), through: textThrough, by: 1) {
            guard let end = offset(seq), end >= previous else { lengths = nil; break }
            lengths?.append(end - previous)
            previous = end
        }
        lengths?.append(contentsOf: texts.map { $0.utf8.count })
        return .success(TakenStream(epoch: UInt64(max(0, a[1].int ?? 0)), topSeq: top, request: request,
                                    prefix: prefix, retainedTexts: texts,
                                    continuations: Int(a[6].int ?? 0), owner: a[7].string ?? "",
                                    sid: a[8].string ?? "", priorPrompt: Int(a[9].string ?? "0") ?? 0,
                                    textStoredEnd: storedEnd, deltaLengths: lengths, mode: mode))
    }

    /// Adds a continuation's re-sent prompt, tokens, to the meta's `prompt` (`HINCRBY`),
    /// so whoever settles the stream later (`expireLease`, the next takeover) charges it.
    public func addPromptCharge(_ id: RequestID, tokens: Int) {
        connection.send(["HINCRBY", StreamKeys(id).meta, "prompt", String(tokens)], nil)
    }

    /// One non-final append of a taken-over stream (`Scripts.appendFenced`): like
    /// `append`, checked against the writer's `epoch` in Redis. Trims with exact `MAXLEN`
    /// on the seqs `StreamTrim` picks.
    public func appendFenced(_ k: StreamKeys, seq: UInt64, json: String, epoch: UInt64, refreshTTL: Bool, stored: String? = nil,
                             done: @escaping (Result<Void, RedisFailure>) -> Void) {
        scripts.run(Scripts.appendFenced, keys: [k.events, k.meta],
                    args: [String(seq), stored ?? storedForm(json, k), String(epoch), trim.trims(seq: seq) ? trimmedLengthArg : ""]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success(()))
        }
        if refreshTTL { refreshTTLs(k) }
    }

    /// What `expireLease` did: `reply` is the seq appended, 0 when nothing was needed,
    /// -1 when the stream no longer exists; with a seq, the budget to settle.
    public struct LeaseExpiry: Sendable, Equatable {
        /// The script's seq reply (see `LeasePolicy.expiry(fromReply:)`).
        public var reply: Int64
        /// The stream's budget hash (empty when none was recorded).
        public var budgetKey: String
        /// The prompt estimate stored at creation, tokens.
        public var promptEstimate: Int
    }

    /// Appends `event` (an `upstream_lost` error) if the stream is still running and
    /// its owner lease has lapsed (`Scripts.expireLease`).
    public func expireLease(_ id: RequestID, event: StreamEvent, done: @escaping (Result<LeaseExpiry, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(expireLeaseScript, keys: [k.events, k.meta, k.live, k.lease, k.text, k.offsets],
                    args: [String(maxLen), String(ttlMs), cipher.map { $0.seal(event.json, aad: k.events) } ?? event.json,
                           lossless ? "1" : "0", event.json]) { r in
            if let f = r.failure { return done(.failure(f)) }
            let a = r.array ?? []
            done(.success(LeaseExpiry(reply: a.first?.int ?? 0, budgetKey: a.count > 1 ? a[1].string ?? "" : "",
                                      promptEstimate: a.count > 2 ? Int(a[2].string ?? "0") ?? 0 : 0)))
        }
    }

    // MARK: At rest (docs/DATA_MODEL.md §15)

    /// The failure kind of a stored value that does not open (`RedisFailure.code`
    /// `.other(unreadableKind)`): readers answer it with `stored_data_unreadable`.
    public static let unreadableKind = "UNREADABLE"

    /// A failure for a stored value that does not open.
    public static func unreadable(_ why: String) -> RedisFailure {
        RedisFailure(code: .other(unreadableKind), message: "\(unreadableKind) \(why)")
    }

    /// Whether `f` is a stored value that did not open (`unreadable`).
    public static func isUnreadable(_ f: RedisFailure) -> Bool { f.code == .other(unreadableKind) }

    /// The associated data of a text record: the text key's name and the record's start
    /// offset in the plaintext (`relay:{id}:text@<start>`), so a record can be moved
    /// neither to another stream nor to another place in its own.
    public static func textAAD(_ k: StreamKeys, start: Int) -> String { k.text + "@" + String(start) }

    /// Events read from stream `key` of a stream in `mode`, their payloads opened
    /// (`AtRestValue.open`).
    public static func opened(_ events: [SequencedEvent], key: String, mode: AtRestMode,
                              cipher: AtRestCipher?) -> Result<[SequencedEvent], RedisFailure> {
        var out = events
        for (i, e) in events.enumerated() {
            do {
                let json = try AtRestValue.open(e.json, key: key, mode: mode, cipher: cipher)
                if mode == .sealed { out[i] = SequencedEvent(seq: e.seq, json: json) }
            } catch {
                return .failure(unreadable(error.description))
            }
        }
        return .success(out)
    }

    /// A live message's event with its payload opened (the payload is sealed like the
    /// stream entry, under the events key's name). Live messages are not at rest: a
    /// sealed payload is opened, a plaintext one (a stream in `AtRestMode.plain`) is
    /// delivered as it is.
    /// - Throws: `AtRestOpenError`.
    public func openLive(_ e: SequencedEvent, id: String) throws(AtRestOpenError) -> SequencedEvent {
        guard e.json.utf8.first == SealedFormat.marker else { return e }
        return SequencedEvent(seq: e.seq, json: try AtRestValue.open(e.json, key: StreamKeys(id).events, mode: .sealed, cipher: cipher))
    }

    /// The plaintext of a whole text key of a stream in `mode` (`AtRestValue.openText`,
    /// each record under `textAAD`).
    /// - Throws: `AtRestOpenError`.
    public static func openText(_ stored: [UInt8], key k: StreamKeys, mode: AtRestMode,
                                cipher: AtRestCipher?) throws(AtRestOpenError) -> [UInt8] {
        try AtRestValue.openText(stored, key: k.text, mode: mode, cipher: cipher) { textAAD(k, start: $0) }
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

/// Collects the `SETRANGE` replies of one `EventLog.writeText` (text, offsets; a cluster
/// redirect may reorder them) and reports once: `.success` when none is an error.
private final class TextWriteOutcome {
    private var remaining: Int
    private var failure: RedisFailure?
    private let done: (Result<Void, RedisFailure>) -> Void

    init(replies: Int, done: @escaping (Result<Void, RedisFailure>) -> Void) {
        remaining = replies
        self.done = done
    }

    func replied(_ r: RedisReplyView) {
        if let f = r.failure, failure == nil { failure = f }
        remaining -= 1
        if remaining == 0 { done(failure.map { .failure($0) } ?? .success(())) }
    }
}
