import RelayAuth
import RelayCore
import RelayLoop
import RelayEventStore

/// Keeps the process's read-ticket keys (`ReadTicketKeys`, shared by its workers) equal to the
/// one in Redis (`relay:read-ticket-key`, docs/PROTOCOL.md §2.5): loads it when the worker's
/// command connection comes up, every `refreshMs` after, and at once when a ticket names a key
/// this process does not know (another instance may have rotated it): such reloads start at
/// most once a second (`TicketKeyReloadPacing`), one serving every ticket waiting, since
/// tickets arrive unauthenticated and made-up key ids must not cost Redis work each. The first instance
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
    private let loop: EventLoop
    private var pacing = TicketKeyReloadPacing()
    /// Tickets with an unknown key waiting for the next paced reload.
    private var unknownKeyWaiters: [(Bool) -> Void] = []
    private var pacedTimer: LoopTimer?

    init(keys: ReadTicketKeys, sessions: SessionStore, loop: EventLoop) {
        self.loop = loop
        self.keys = keys
        self.sessions = sessions
        timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.load() }
        timer?.schedule(afterMs: Self.refreshMs)
    }

    func stop() {
        timer?.cancel()
        timer = nil
        pacedTimer?.cancel()
        pacedTimer = nil
    }

    /// A ticket names a key this process does not know: `done(true)` once a reload paced by
    /// `TicketKeyReloadPacing` installed the key in Redis (look at the ticket again),
    /// `done(false)` when Redis could not answer. Every ticket waiting shares one reload.
    func reloadForUnknownKey(done: @escaping (Bool) -> Void) {
        unknownKeyWaiters.append(done)
        guard unknownKeyWaiters.count == 1 else { return }   // a reload is due or under way for them
        let delay = pacing.delayMs(nowMs: loop.nowMs)
        guard delay > 0 else { return startPacedReload() }
        if pacedTimer == nil { pacedTimer = LoopTimer(loop: loop) { [unowned self] in self.startPacedReload() } }
        pacedTimer?.schedule(afterMs: delay)
    }

    private func startPacedReload() {
        pacing.started(nowMs: loop.nowMs)
        load { [weak self] ok in
            guard let self else { return }
            let w = self.unknownKeyWaiters
            self.unknownKeyWaiters = []
            for f in w { f(ok) }
        }
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
