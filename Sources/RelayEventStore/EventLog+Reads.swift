import Foundation
import RelayCore
import RelayRedis

/// Reading a stream for a resume (docs/DATA_MODEL.md §2–§4): its facts, its retained entries,
/// and the lossless catch-up text.
extension EventLog {
    /// Reads a stream's resume facts (`Scripts.open`); `nil` when it does not exist (or expired).
    public func open(_ id: RequestID, done: @escaping (Result<StreamInfo?, RedisFailure>) -> Void) {
        let k = StreamKeys(id)
        scripts.run(Scripts.open, keys: [k.meta, k.events, k.text], args: []) { r in
            // A key of another type is damage, not an outage (`storedShape`).
            done(r.map { reply in
                guard case .stream(let info) = reply else { return nil }
                return info
            }.mapError(EventLog.storedShape))
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

    /// The events after `seq`, whatever holds them (docs/PROTOCOL.md §6.3): the retained
    /// entries (`range`), preceded — when the retained window moved past `seq` and the log
    /// keeps the text (`lossless`) — by the original deltas cut back out of the text key at
    /// their stored end offsets (`CatchUpEvents`). Every read of an answer's events comes
    /// through here: the SSE replay, the offset reads' JSON, long-poll and SSE bodies.
    /// Failures: Redis's, or `unreadable` (a value that does not open, or offsets that do
    /// not describe the text).
    public func read(_ id: RequestID, after seq: UInt64, done: @escaping (Result<EventRead, RedisFailure>) -> Void) {
        range(id, after: seq) { [self] r in
            let events: [SequencedEvent]
            switch r {
            case .failure(let f): return done(.failure(EventLog.storedShape(f)))
            case .success(let e): events = e
            }
            switch CatchUpEvents.continuity(after: seq, events: events, lossless: lossless) {
            case .complete: done(.success(.events(events, caughtUp: 0)))
            case .gap(let to): done(.success(.gap(to: to)))
            case .catchUp(let to):
                catchUp(id, from: seq, to: to) { r in
                    switch r {
                    case .failure(let f): done(.failure(EventLog.storedShape(f)))
                    case .success(nil): done(.success(.gap(to: to)))
                    case .success(let deltas?): done(.success(.events(deltas + events, caughtUp: deltas.count)))
                    }
                }
            }
        }
    }

    /// Events `from+1 … to` as they were first sent (deltas and parts), cut out of the
    /// text key at the stored end offsets (`Scripts.catchUp`, `CatchUpEvents.events`); `nil` when the text has expired;
    /// empty, without a read, when `to ≤ from`.
    public func catchUp(_ id: RequestID, from: UInt64, to: UInt64, done: @escaping (Result<[SequencedEvent]?, RedisFailure>) -> Void) {
        guard to > from else { return done(.success([])) }
        let k = StreamKeys(id)
        scripts.run(Scripts.catchUp, keys: [k.text, k.offsets, k.meta], args: [String(from), String(to), cipher != nil ? "1" : "0"]) { [cipher] r in
            let found: Scripts.CatchUpText
            switch r {
            case .failure(let f): return done(.failure(f))
            case .success(.textGone): return done(.success(nil))
            case .success(.text(let t)): found = t
            }
            let start = found.start, end = found.end
            var cut = found.text[...]
            if found.sealed {
                // Sealed: the whole text key came back (its records); open them, then cut.
                do {
                    let plain = try EventLog.openText(found.text, key: k, mode: .sealed, cipher: cipher)
                    guard start >= 0, end >= start, end <= plain.count else {
                        return done(.failure(EventLog.unreadable("\(k.text): its records hold \(plain.count) bytes, offsets ask for \(start)..<\(end)")))
                    }
                    cut = plain[start..<end]
                } catch {
                    return done(.failure(EventLog.unreadable("\(error)")))
                }
            }
            guard let deltas = CatchUpEvents.events(from: from, to: to, start: start, ends: found.ends[...], text: cut) else {
                return done(.failure(EventLog.unreadable("\(k.offsets): the end offsets of events \(from + 1)…\(to) do not describe the text")))
            }
            done(.success(deltas))
        }
    }
}

/// What one read of an answer's events after a seq found (`EventLog.read`).
public enum EventRead: Sendable, Equatable {
    /// The events after the seq, contiguous from it, in seq order; the first `caughtUp`
    /// of them came from the text key (the retained window had moved past them).
    case events([SequencedEvent], caughtUp: Int)
    /// Events up to `to` are gone: the window moved past the seq and the log keeps no
    /// text for them (`409 resume_gap`).
    case gap(to: UInt64)
}
