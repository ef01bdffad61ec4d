import Foundation
import RelayCore
import RelayRedis

/// Owner leases, takeover and lease expiry (docs/DATA_MODEL.md §6, §6.1).
extension EventLog {
    /// Owner lease of a running generation, ms (`relay:{id}:lease` `PX`); refreshed
    /// every `leaseMs / 3`.
    public static let leaseMs = 3_000

    /// Refreshes the owner lease of a running generation (`Scripts.refreshLease`): only
    /// while `epoch` is the stream's ownership epoch and the lease is this instance's or
    /// unclaimed. Runs for every running generation every `leaseMs / 3`. `done` gets what
    /// it found (`LeaseRefresh`, declared with the script); it is not called when Redis
    /// failed (the next round tries again).
    public func refreshLease(_ k: StreamKeys, instance: String, epoch: UInt64, done: @escaping (LeaseRefresh) -> Void) {
        scripts.run(Scripts.refreshLease, keys: [k.lease, k.meta], args: [instance, leaseMsArg, String(epoch)]) { r in
            guard case .success(let found) = r else { return }
            done(found)
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
        /// It is sealed at rest and this relay has no keys: left to a relay that has them
        /// (nothing was changed).
        case needsKeys
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
        /// The stored pieces (`StoredPiece`: deltas' text, parts' JSON) of the events before
        /// the oldest retained entry, from the lossless-resume text key; empty when every
        /// event is retained.
        public var prefix: String
        /// Each of `prefix`'s pieces, seqs 1 … (one per event before the retained entries).
        public var prefixPieces: [StoredPiece.Length]
        /// The piece of each retained event after `prefix`, seqs `topSeq - count + 1 … topSeq`.
        public var retained: [StoredPiece]
        /// Every event stored so far, seq 1 … `topSeq`, typed (deltas and parts).
        public var events: [StreamEvent] {
            var out: [StreamEvent] = []
            out.reserveCapacity(prefixPieces.count + retained.count)
            let bytes = Array(prefix.utf8)
            var at = 0
            for (i, p) in prefixPieces.enumerated() {
                if let e = StoredPiece.event(seq: UInt64(i + 1), bytes: bytes[at..<(at + p.bytes)], isPart: p.isPart),
                   let typed = try? StreamEvent(json: e.json) { out.append(typed) }
                at += p.bytes
            }
            for r in retained {
                if !r.isPart { out.append(.delta(r.bytes)) } else if let typed = try? StreamEvent(json: r.bytes) { out.append(typed) }
            }
            return out
        }
        /// The answer's text so far: every stored `delta`, concatenated (parts left out).
        public var text: String {
            events.reduce(into: "") { s, e in if case .delta(let t) = e { s += t } }
        }
        /// Completion tokens generated so far: one per `delta`, reasoning piece and argument
        /// piece (`AnswerPart.countsAsToken`).
        public var tokens: Int {
            events.reduce(0) { n, e in
                switch e {
                case .delta: return n + 1
                case .part(let p): return n + (p.countsAsToken ? 1 : 0)
                case .done, .error: return n
                }
            }
        }
        /// Every event's piece length and mark, seqs 1 … `topSeq` (the retained answer's,
        /// `StreamAppender.seedRetention`).
        public var pieces: [StoredPiece.Length] { prefixPieces + retained.map(\.length) }
        /// Every event's piece, concatenated (UTF-8).
        public var pieceBytes: [UInt8] { Array(prefix.utf8) + retained.flatMap { Array($0.bytes.utf8) } }
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
            switch r {
            case .failure(let f): done(.failure(f))
            case .success(.vanished): done(.success(.vanished))
            case .success(.needsKeys): done(.success(.needsKeys))
            case .success(.notContinuable): done(.success(.notContinuable))
            case .success(.ownerAlive): done(.success(.ownerAlive))
            case .success(.ended(let e)):
                let mode = self.mode(metaField: e.atRest)
                let final = (try? EventLog.opened(e.finalEntry, key: k.events, mode: mode, cipher: cipher).get())?.last
                done(.success(.ended(EndedStream(state: e.state, budgetKey: e.budgetKey, prompt: e.prompt, lastSeq: e.lastSeq,
                                                 finalEvent: final.flatMap { try? StreamEvent(jsonData: Data($0.json.utf8)) }))))
            case .success(.taken(let t)):
                done(EventLog.taken(t, keys: k, mode: self.mode(metaField: t.atRest), cipher: cipher).map { .taken($0) })
            }
        }
    }

    /// Opens what `Scripts.takeover` took over (`Scripts.TakeoverTaken`): the values sealed
    /// at rest, and, with sealed text, finds the seq its records end at (the text after it
    /// is in the retained entries). A value that does not open, or text that does not
    /// meet the entries, fails with `UNREADABLE`.
    static func taken(_ t: Scripts.TakeoverTaken, keys k: StreamKeys, mode: AtRestMode, cipher: AtRestCipher?) -> Result<TakenStream, RedisFailure> {
        let top = t.topSeq
        let offsets = t.offsets
        func word(_ seq: UInt64) -> (end: Int, isPart: Bool)? {
            let i = Int(seq) * 4
            guard seq > 0, i + 4 <= offsets.count else { return seq == 0 ? (0, false) : nil }
            return StoredPiece.end(ofWord: offsets[i..<i + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }
        func offset(_ seq: UInt64) -> Int? { word(seq)?.end }
        let entries: [SequencedEvent]
        switch EventLog.opened(t.entries, key: k.events, mode: mode, cipher: cipher) {
        case .success(let e): entries = e
        case .failure(let f): return .failure(f)
        }
        let request: String
        do { request = try AtRestValue.open(t.request, key: k.request, mode: mode, cipher: cipher) } catch {
            return .failure(unreadable(error.description))
        }
        // Plain text: the script cut the text before the oldest retained entry. Sealed: the
        // whole text key came back; its records end at an event whose end offset is their
        // plaintext length.
        var prefix = t.prefix
        var textThrough = (entries.first?.seq ?? top + 1) - 1
        var storedEnd: Int?
        if !t.wholeText.isEmpty {
            let whole = t.wholeText
            let plain: [UInt8]
            do { plain = try EventLog.openText(whole, key: k, mode: mode, cipher: cipher) } catch {
                return .failure(unreadable("\(error)"))
            }
            var through: UInt64? = plain.isEmpty ? 0 : nil
            // Only seqs the offsets key holds can end the records: the search is bounded by
            // what is stored, never by a top seq (a copied entry may claim any seq).
            var seq = min(top, UInt64(max(0, offsets.count / 4 - 1)))
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
        var retained: [StoredPiece] = []
        for e in entries where e.seq > textThrough {
            switch try? StreamEvent(jsonData: Data(e.json.utf8)) {
            case .delta(let t)?: retained.append(StoredPiece(bytes: t, isPart: false))
            case .part?: retained.append(StoredPiece(bytes: e.json, isPart: true))
            default: return .failure(unreadable("entry \(e.seq) of a running stream is not a delta or a part"))
            }
        }
        guard textThrough + UInt64(retained.count) == top else {
            return .failure(unreadable("\(k.events): entries \(textThrough + 1)…\(top) are not all retained"))
        }
        // Each piece before the retained entries, from the offsets: where it ends and
        // whether it is a part. They must cut the prefix into whole events, every one
        // read back, or nothing is continued from it.
        var prefixPieces: [StoredPiece.Length] = []
        let prefixBytes = Array(prefix.utf8)
        var previous = 0
        for seq in stride(from: UInt64(1), through: textThrough, by: 1) {
            guard let (end, isPart) = word(seq), end >= previous, end <= prefixBytes.count,
                  StoredPiece.event(seq: seq, bytes: prefixBytes[previous..<end], isPart: isPart) != nil else {
                return .failure(unreadable("\(k.offsets): the end offsets of events 1…\(textThrough) do not describe the text"))
            }
            prefixPieces.append(StoredPiece.Length(bytes: end - previous, isPart: isPart))
            previous = end
        }
        guard previous == prefixBytes.count else {
            return .failure(unreadable("\(k.text): \(prefixBytes.count) bytes, the offsets end at \(previous)"))
        }
        return .success(TakenStream(epoch: t.epoch, topSeq: top, request: request,
                                    prefix: prefix, prefixPieces: prefixPieces, retained: retained,
                                    continuations: t.continuations, owner: t.owner,
                                    sid: t.sid, priorPrompt: t.priorPrompt,
                                    textStoredEnd: storedEnd, mode: mode))
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
            done(r.map { _ in () })
        }
        if refreshTTL { refreshTTLs(k) }
    }

    /// Appends `event` (an `upstream_lost` error) if the stream is still running and
    /// its owner lease has lapsed (`Scripts.expireLease`, `Scripts.expireLeaseSharded` on a
    /// cluster). `done` gets what it did (`Scripts.ExpireLeaseReply`): with a seq, the
    /// budget to settle.
    public func expireLease(_ id: RequestID, event: StreamEvent, done: @escaping (Result<Scripts.ExpireLeaseReply, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(expireLeaseScript, keys: [k.events, k.meta, k.live, k.lease, k.text, k.offsets],
                    args: [String(maxLen), String(ttlMs), cipher.map { $0.seal(event.json, aad: k.events) } ?? event.json,
                           lossless ? "1" : "0", event.json, cipher != nil ? "1" : "0"], done: done)
    }
}
