import Foundation
import RelayCore
import RelayRedis

/// Values sealed at rest (docs/DATA_MODEL.md §15): the stream's mode, sealing what is
/// written, opening what is read.
extension EventLog {
    /// The mode this relay creates streams in (`AtRestMode.forNewStreams`): sealed when it
    /// has keys.
    public var newStreamMode: AtRestMode { AtRestMode.forNewStreams(haveKeys: cipher != nil) }

    /// What seals a stream's values in `mode`: the cipher in a sealed stream (`nil` when
    /// this relay has no keys: it cannot write one), `nil` in a plain one.
    public func sealer(_ mode: AtRestMode) -> AtRestCipher? { mode == .sealed ? cipher : nil }

    /// A stream's mode as its meta's `atrest` field says (`AtRestMode.of`).
    func mode(metaField: String?) -> AtRestMode { AtRestMode.of(metaField: metaField, haveKeys: cipher != nil) }

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
        guard let cipher = sealer(newStreamMode) else { return encoded }
        return cipher.seal(encoded, aad: k.request)
    }

    // MARK: At rest (docs/DATA_MODEL.md §15)

    /// The failure kind of a stored value that does not open (`RedisFailure.code`
    /// `.other(unreadableKind)`): readers answer it with `stored_data_unreadable`.
    public static let unreadableKind = "UNREADABLE"

    /// A failure for a stored value that does not open.
    public static func unreadable(_ why: String) -> RedisFailure {
        RedisFailure(code: .other(unreadableKind), message: "\(unreadableKind) \(why)")
    }

    /// `f`, or — when Redis said a key holds another type than the relay stores there
    /// (`WRONGTYPE`: a Redis writer's value, not an outage) — `unreadable`: retrying
    /// would read the same damage forever.
    public static func storedShape(_ f: RedisFailure) -> RedisFailure {
        f.code == .other("WRONGTYPE") ? unreadable(f.message) : f
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
                guard EventLog.isEventJSON(json) else {
                    return .failure(unreadable("\(key): entry \(e.seq) is not an event's one-line JSON object"))
                }
                if mode == .sealed { out[i] = SequencedEvent(seq: e.seq, json: json) }
            } catch {
                return .failure(unreadable(error.description))
            }
        }
        return .success(out)
    }

    /// Whether a live message must not be delivered as it came: this relay has keys and the
    /// message is plaintext. A live message carries no stream mode, and only a stream created
    /// without keys (`AtRestMode.plain`, a rolling switch to encryption) publishes plaintext;
    /// such a message is delivered by way of its stored entry instead (a replay), which is
    /// read under the stream's mode — so a Redis writer's plaintext message for a sealed
    /// stream never reaches a client (docs/DATA_MODEL.md §15).
    public func liveNeedsStoredRead(_ e: SequencedEvent) -> Bool {
        cipher != nil && e.json.utf8.first != SealedFormat.marker
    }

    /// A live message's event with its payload opened (the payload is sealed like the
    /// stream entry, under the events key's name). Live messages are not at rest: a
    /// sealed payload is opened, a plaintext one (a stream in `AtRestMode.plain`) is
    /// delivered as it is (a relay with keys reads it back from the store first,
    /// `liveNeedsStoredRead`).
    /// - Throws: `AtRestOpenError`.
    public func openLive(_ e: SequencedEvent, id: String) throws(AtRestOpenError) -> SequencedEvent {
        let key = StreamKeys(id).events
        let sealed = e.json.utf8.first == SealedFormat.marker
        let json = sealed ? try AtRestValue.open(e.json, key: key, mode: .sealed, cipher: cipher) : e.json
        guard EventLog.isEventJSON(json) else { throw AtRestOpenError(.malformed(.notSealed), key: key) }
        return sealed ? SequencedEvent(seq: e.seq, json: json) : e
    }

    /// Whether a stored event, as read back, is what the relay stores: one JSON object on
    /// one line (it starts with `{` and holds no CR or LF). Anything else — a sealed value in
    /// a stream whose mode was rewritten to `plain`, an entry a Redis writer made to smuggle
    /// SSE fields — never reaches a client: it would be framed as `data:` lines verbatim.
    public static func isEventJSON(_ json: String) -> Bool {
        json.utf8.first == 0x7B && !json.utf8.contains { $0 == 0x0A || $0 == 0x0D }
    }

    /// The plaintext of a whole text key of a stream in `mode` (`AtRestValue.openText`,
    /// each record under `textAAD`).
    /// - Throws: `AtRestOpenError`.
    public static func openText(_ stored: [UInt8], key k: StreamKeys, mode: AtRestMode,
                                cipher: AtRestCipher?) throws(AtRestOpenError) -> [UInt8] {
        try AtRestValue.openText(stored, key: k.text, mode: mode, cipher: cipher) { textAAD(k, start: $0) }
    }
}
