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

/// Reading a stream for a resume (docs/DATA_MODEL.md §2–§4): its facts, its retained entries,
/// and the lossless catch-up text.
extension EventLog {
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
}
