import RelayCore
@testable import RelayEventStore

/// The event log's write rules in memory, for the streams core's tests without Redis
/// (docs/DATA_MODEL.md §5–§6): one stream per id with its entries in seq order, its state,
/// its ownership epoch and its owner lease. An append is refused, with the typed reason the
/// Redis store gives (`AppendStop`), when the writer's epoch is stale (taken over), the stream
/// is gone, or it has ended; a seq that is not the next one is a hole. Loop-free: replies are
/// given when the test says (`answerAppends`) or at once.
final class InMemoryAnswerStore {
    struct Stream {
        var entries: [SequencedEvent] = []
        /// Each event's piece by seq (`StoredPiece`: a delta's text, a part's JSON): the
        /// lossless-resume text key, which writers write with plain `SETRANGE`s that no
        /// epoch fences (`StreamAppender.writeTextIfDue`).
        var pieces: [UInt64: StoredPiece] = [:]
        var state: StreamState = .running
        /// The ownership epoch appends must carry (`Scripts.takeover` raises it).
        var epoch: UInt64 = 0
        /// Who holds the owner lease and until when (loop ms).
        var leaseHolder: String
        var leaseUntilMs: UInt64
        var continuations = 0
        var topSeq: UInt64 { entries.last?.seq ?? 0 }
    }

    /// The owner lease, ms (`EventLog.leaseMs`).
    let leaseMs = UInt64(EventLog.leaseMs)
    private(set) var streams: [String: Stream] = [:]
    /// Writers write each delta's text (lossless resume on, the default) or not.
    var lossless = true
    /// Appends answered at once (true) or held until `answerAppends()`.
    var answerAppendsAtOnce = true
    private var pendingReplies: [() -> Void] = []
    /// Every append the store took or refused, in order: (writer's instance, seq, stored).
    private(set) var appendLog: [(instance: String, seq: UInt64, stored: Bool)] = []

    /// Creates stream `id` with `instance` holding its lease from `nowMs` (`Scripts.create`).
    func create(_ id: RequestID, instance: String, nowMs: UInt64) {
        streams[id.value] = Stream(leaseHolder: instance, leaseUntilMs: nowMs + leaseMs)
    }

    /// The stream's keys expired or were deleted.
    func drop(_ id: RequestID) { streams[id.value] = nil }

    /// Stream `id`'s stored events, in seq order.
    func events(_ id: RequestID) -> [SequencedEvent] { streams[id.value]?.entries ?? [] }

    /// The answer's text as a lossless catch-up reads it: the text key's piece of each stored
    /// delta, in seq order, parts left out (with lossless resume off: each stored delta's own
    /// content).
    func text(_ id: RequestID) -> String {
        guard let s = streams[id.value] else { return "" }
        return s.entries.map { e in
            if lossless { return s.pieces[e.seq].map { $0.isPart ? "" : $0.bytes } ?? "" }
            if case .delta(let t)? = try? StreamEvent(json: e.json) { return t }
            return ""
        }.joined()
    }

    func state(_ id: RequestID) -> StreamState? { streams[id.value]?.state }

    /// One append as the Redis store decides it (`Scripts.appendFenced`, `Scripts.appendFinal`,
    /// `Scripts.appendStatus`), `nil` when stored: the epoch fence first (a stale writer meets the taker's
    /// entries, so "taken over" is checked before anything in the tail), then the stream's
    /// existence and state, then the seq. A resend of a stored event is stored.
    func append(_ id: RequestID, instance: String, seq: UInt64, json: String, epoch: UInt64,
                finalState: StreamState?) -> AppendStop? {
        guard var s = streams[id.value] else { return record(instance, seq, .streamGone) }
        if s.epoch != epoch { return record(instance, seq, .takenOver) }
        if let stored = s.entries.last(where: { $0.seq == seq }) {
            return record(instance, seq, stored.json == json ? nil : .foreignEntry(seq: seq))
        }
        if s.state != .running { return record(instance, seq, .ended(state: s.state.rawValue)) }
        if seq != s.topSeq + 1 { return record(instance, seq, .hole(afterSeq: s.topSeq)) }
        s.entries.append(SequencedEvent(seq: seq, json: json))
        if let finalState { s.state = finalState }
        streams[id.value] = s
        return record(instance, seq, nil)
    }

    /// A writer's text write for `seq` (lossless resume): unfenced, like the Redis one — it
    /// lands whoever owns the stream, so only the lease hold keeps a stale owner from it.
    func writeText(_ id: RequestID, seq: UInt64, piece: StoredPiece) {
        guard lossless else { return }
        streams[id.value]?.pieces[seq] = piece
    }

    private func record(_ instance: String, _ seq: UInt64, _ refused: AppendStop?) -> AppendStop? {
        appendLog.append((instance, seq, refused == nil))
        return refused
    }

    /// Gives `reply` now or when the test calls `answerAppends()`.
    func reply(_ reply: @escaping () -> Void) {
        answerAppendsAtOnce ? reply() : pendingReplies.append(reply)
    }

    /// Answers the appends held so far, in the order they were sent.
    func answerAppends() {
        while !pendingReplies.isEmpty {
            let r = pendingReplies
            pendingReplies.removeAll()
            r.forEach { $0() }
        }
    }

    /// The owner's lease refresh, fenced by its epoch (`Scripts.refreshLease`).
    func refreshLease(_ id: RequestID, instance: String, epoch: UInt64, nowMs: UInt64) -> EventLog.LeaseRefresh {
        guard var s = streams[id.value] else { return .notRunning }
        guard s.epoch == epoch, s.leaseHolder == instance || s.state != .running else { return .takenOver }
        guard s.state == .running else { return .notRunning }
        s.leaseUntilMs = nowMs + leaseMs
        streams[id.value] = s
        return .held
    }

    /// Ends stream `id` with `upstream_lost` at the next seq when its lease lapsed
    /// (`Scripts.expireLease`: its epoch unchanged). Returns the seq appended, or nil.
    @discardableResult
    func expireLease(_ id: RequestID, nowMs: UInt64) -> UInt64? {
        guard var s = streams[id.value], s.state == .running, nowMs >= s.leaseUntilMs else { return nil }
        let seq = s.topSeq + 1
        s.entries.append(SequencedEvent(seq: seq, json: APIError(.upstreamLost, "owner lost").asEvent.json))
        s.state = .failed
        streams[id.value] = s
        return seq
    }

    /// Takes stream `id` over for `instance` when its lease lapsed at `nowMs`
    /// (`Scripts.takeover`): a new epoch, the lease, and what the continuation needs.
    func takeover(_ id: RequestID, instance: String, nowMs: UInt64, maxContinuations: Int) -> EventLog.Takeover {
        guard var s = streams[id.value] else { return .vanished }
        guard s.state == .running else {
            return .ended(EventLog.EndedStream(state: s.state.rawValue, budgetKey: "", prompt: 0, lastSeq: s.topSeq, finalEvent: nil))
        }
        guard nowMs >= s.leaseUntilMs else { return .ownerAlive }
        guard s.continuations < maxContinuations else { return .notContinuable }
        s.epoch += 1
        s.continuations += 1
        s.leaseHolder = instance
        s.leaseUntilMs = nowMs + leaseMs
        streams[id.value] = s
        let pieces = s.entries.map { s.pieces[$0.seq] ?? StoredPiece(bytes: "", isPart: false) }
        return .taken(EventLog.TakenStream(epoch: s.epoch, topSeq: s.topSeq, request: "{}", prefix: "", prefixPieces: [],
                                           retained: pieces, continuations: s.continuations, owner: "o", sid: "s", priorPrompt: 0))
    }
}

/// An `AnswerWriter` on an `InMemoryAnswerStore`: the appender's contract without Redis.
/// Events are sent one at a time in seq order (each after the one before it was stored),
/// nothing is sent while the lease is held (`LeaseHold`, the clock `nowMs`), each stored
/// event is acknowledged once, in order, and the first refusal stops the writer for good.
final class InMemoryAnswerWriter: AnswerWriter {
    let store: InMemoryAnswerStore
    let id: RequestID
    let instance: String
    let epoch: UInt64
    private let nowMs: () -> UInt64
    private(set) var ackedSeq: UInt64
    var onPermanentFailure: ((AppendStop) -> Void)?
    var onDrained: (() -> Void)?
    var onAcknowledged: ((UInt64, String) -> Void)?
    var onLeaseUnknown: (() -> Void)?
    var onRetained: ((RetentionOutcome) -> Void)?
    private var queue: [(seq: UInt64, json: String, piece: StoredPiece, finalState: StreamState?)] = []
    private var inFlight = false
    private var lease = LeaseHold()
    private var stopped = false
    private(set) var isClosed = false
    /// Retention on (`retain` was called): the final `done` reports `.retained`.
    private var retaining = false
    private var retainedBytes = 0

    init(store: InMemoryAnswerStore, id: RequestID, instance: String, taken: EventLog.TakenStream?,
         nowMs: @escaping () -> UInt64) {
        self.store = store
        self.id = id
        self.instance = instance
        self.epoch = taken?.epoch ?? 0
        self.ackedSeq = taken?.topSeq ?? 0
        self.nowMs = nowMs
    }

    func retain(owner: String, ownerHash: String, sid: String, createdMs: UInt64, wallClock: @escaping () -> UInt64) {
        retaining = true
    }

    func seedRetention(text: [UInt8], pieces: [StoredPiece.Length]) { retainedBytes += text.count }
    func leaseKnown(untilMs: UInt64) { lease.known(untilMs: untilMs) }

    func leaseConfirmed(untilMs: UInt64) {
        guard lease.confirmed(untilMs: untilMs), !isClosed else { return }
        sendNext()
    }

    func holdIfLeaseLapsed() -> Bool { !leaseAllows() }

    private func leaseAllows() -> Bool {
        switch lease.check(nowMs: nowMs()) {
        case .allowed: return true
        case .held: return false
        case .holdStarted:
            onLeaseUnknown?()
            return false
        }
    }

    func append(seq: UInt64, event: StreamEvent) {
        guard !isClosed, !stopped else { return }
        let json = event.json
        let finalState = StreamState(endingWith: event)
        let piece = StoredPiece(event, json: json)
        if finalState == nil { retainedBytes += piece.bytes.utf8.count }
        queue.append((seq, json, piece, finalState))
        sendNext()
    }

    private func sendNext() {
        guard !inFlight, !stopped, !isClosed, let e = queue.first, leaseAllows() else { return }
        inFlight = true
        if e.finalState == nil { store.writeText(id, seq: e.seq, piece: e.piece) }
        let r = store.append(id, instance: instance, seq: e.seq, json: e.json, epoch: epoch,
                             finalState: e.finalState)
        store.reply { [self] in
            inFlight = false
            guard !isClosed else { return }
            if let stop = r {
                stopped = true
                onPermanentFailure?(stop)
            } else {
                queue.removeFirst()
                ackedSeq = e.seq
                if retaining, let s = e.finalState, s == .done || s == .cancelled { onRetained?(.retained(bytes: retainedBytes)) }
                onAcknowledged?(e.seq, e.json)
                if queue.isEmpty { onDrained?() } else { sendNext() }
            }
        }
    }

    func close() {
        isClosed = true
        onPermanentFailure = nil
        onDrained = nil
        onAcknowledged = nil
        onLeaseUnknown = nil
        onRetained = nil
    }
}
