import RelayCore
import RelayRedis

/// A takeover only by a relay that can read what it takes (docs/DATA_MODEL.md §15).
extension EventLog {
    /// `takeover`, after checking that this relay's keys open the stream's stored request: a
    /// relay with keys that do not open it (another key list, a kid it lacks) would bump the
    /// ownership epoch and hold the lease, then fail to read the answer — spending one of the
    /// stream's `RELAY_MAX_CONTINUATIONS` and delaying the relay that can continue it. Such a
    /// relay answers `.needsKeys` and changes nothing, as a relay without keys does (the script's
    /// own check). One `GET` more per takeover attempt, only with keys set; a plaintext or
    /// missing request is left to the script (it decides `plain` streams and vanished ones).
    public func takeoverIfReadable(_ id: RequestID, instance: String, maxContinuations: Int,
                                   done: @escaping (Result<Takeover, RedisFailure>) -> Void) {
        guard let cipher else { return takeover(id, instance: instance, maxContinuations: maxContinuations, done: done) }
        let k = StreamKeys(id)
        connection.send(["GET", k.request]) { [self] r in
            if let f = r.failure { return done(.failure(f)) }
            if let stored = r.string, stored.utf8.first == SealedFormat.marker {
                do throws(AtRestOpenError) {
                    _ = try AtRestValue.open(stored, key: k.request, mode: .sealed, cipher: cipher)
                } catch {
                    switch error.kind {
                    case .unknownKid, .authenticationFailed: return done(.success(.needsKeys))
                    default: break   // damaged: the takeover's own reads report it
                    }
                }
            }
            takeover(id, instance: instance, maxContinuations: maxContinuations, done: done)
        }
    }
}
