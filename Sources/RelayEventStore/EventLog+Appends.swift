import Foundation
import RelayCore
import RelayRedis

/// The append path (docs/DATA_MODEL.md §5): the per-event `XADD`, the text and offsets, the
/// final event, the live publish, and the tail read after a failure.
extension EventLog {
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
    func setRange(_ key: String, at offset: Int, _ bytes: [UInt8], view: @escaping (RedisReplyView) -> Void) {
        let c = command
        c.start(argumentCount: 4)
        c.add(constant: "SETRANGE")
        c.add(key)
        c.add(offset)
        bytes.withUnsafeBufferPointer { c.add(bytes: $0) }
        connection.send(c, view: view)
    }

    /// `PEXPIRE <key> <ttlMs>`, its reply only counted when an error (`auxiliaryReply`).
    func expire(_ key: String) {
        let c = command
        c.start(argumentCount: 3)
        c.add(constant: "PEXPIRE")
        c.add(key)
        c.add(ttlArg)
        connection.send(c, view: auxiliaryReply)
    }

    /// `PEXPIRE` of every key of a stream (`ttlMs`).
    func refreshTTLs(_ k: StreamKeys) {
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
            for o in w.offsets { args += [String(o.seq), String(o.word)] }
        }
        scripts.run(Scripts.appendFinal, keys: [k.events, k.meta, k.text, k.offsets, k.answer, k.request], args: args,
                    retryNoScript: false) { r in
            done(r.map { _ in () })
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
    func publishing(_ s: StreamCommands, seq: UInt64, json: String, stored: String?) -> RESPCommand {
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
            let tail: Scripts.AppendStatusTail
            switch r {
            case .failure(let f): return done(.failure(f))
            case .success(.gone): return done(.success(StoredTail(state: nil, topSeq: 0, entries: [])))
            case .success(.tail(let t)): tail = t
            }
            let entries: [SequencedEvent]
            switch EventLog.opened(tail.entries, key: k.events, mode: mode, cipher: cipher) {
            case .success(let e): entries = e
            case .failure(let f): return done(.failure(f))
            }
            done(.success(StoredTail(state: tail.state, topSeq: tail.topSeq, entries: entries,
                                     textEnd: textThrough > 0 ? tail.textEnd : nil)))
        }
    }

    /// Deletes the text and offsets of a stream found gone (its pipelined `SETRANGE`s
    /// may have re-created them without a TTL).
    public func discardText(_ k: StreamKeys) {
        guard lossless else { return }
        connection.send(["DEL", k.text, k.offsets], view: auxiliaryReply)
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
