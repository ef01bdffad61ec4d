import RelayAuth
import RelayCore
import RelayLoop
import RelayEventStore

/// Keeps the process's read-ticket keys (`ReadTicketKeys`, shared by its workers) equal to the
/// one in Redis (`relay:read-ticket-key`, docs/PROTOCOL.md §2.5): loads it when the worker's
/// command connection comes up, every `refreshMs` after, and at once when a ticket names a key
/// this process does not know (another instance may have rotated it). The first instance
/// to load creates the key (`SET NX` of 32 random bytes), so every instance signs with the same
/// key without any configuration. Loop thread only.
final class ReadTicketKeyLoader {
    /// How often the key is read again, ms: an operator's rotation (`DEL relay:read-ticket-key`)
    /// reaches every instance within this time.
    static let refreshMs: UInt64 = 60_000

    private let keys: ReadTicketKeys
    private let sessions: SessionStore
    private var timer: LoopTimer?
    private var waiting: [(Bool) -> Void] = []

    init(keys: ReadTicketKeys, sessions: SessionStore, loop: EventLoop) {
        self.keys = keys
        self.sessions = sessions
        timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.load() }
        timer?.schedule(afterMs: Self.refreshMs)
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    /// Reads (or creates) the shared key and installs it; `done(true)` once installed,
    /// `done(false)` when Redis could not answer. Concurrent calls share one round trip.
    func load(done: ((Bool) -> Void)? = nil) {
        if let done { waiting.append(done) }
        guard waiting.count <= 1 || done == nil else { return }
        sessions.loadReadTicketKey(candidate: ReadTicketKey.random().hex) { [weak self] r in
            guard let self else { return }
            var ok = false
            switch r {
            case .success(nil):
                break
            case .success(let hex?):
                if let key = ReadTicketKey(hex: hex) {
                    self.keys.install(key)
                    ok = true
                } else {
                    Log.error("relay:read-ticket-key is not 64 hex digits; delete it to have a new one made", [:])
                }
            case .failure:
                break
            }
            let w = self.waiting
            self.waiting = []
            for f in w { f(ok) }
        }
    }
}
