import RelayCore

/// The one writer of a running answer's events, as its generation sees it
/// (docs/ARCHITECTURE.md, "Generation"): events go in numbered, in seq order; each comes
/// back acknowledged once the store holds it (every earlier one too), or the writer stops
/// for good with a typed reason. `StreamAppender` writes to Redis (docs/DATA_MODEL.md §5);
/// the streams core's tests write to memory. Loop thread only.
///
/// Lifetime: the callbacks usually capture the owner, which calls `close()` when it is done
/// with the writer; from then on nothing is sent and nothing is called back.
public protocol AnswerWriter: AnyObject {
    /// The highest seq the store acknowledged (every earlier one too); a continuation's
    /// starts at the taken stream's `topSeq`.
    var ackedSeq: UInt64 { get }
    /// Nothing more can be appended (`AppendStop`): called once, then nothing else.
    var onPermanentFailure: ((AppendStop) -> Void)? { get set }
    /// Every queued event is acknowledged (after the final one: the answer is stored whole).
    var onDrained: (() -> Void)? { get set }
    /// An event was stored: seq and event JSON, once per event, in seq order, never for
    /// an event the store did not take.
    var onAcknowledged: ((UInt64, String) -> Void)? { get set }
    /// The clock passed the lease the owner last confirmed (`LeaseHold`): the writer holds
    /// everything until `leaseConfirmed`; asked once per hold.
    var onLeaseUnknown: (() -> Void)? { get set }
    /// How the answer's retention went, once, when its final `done` is stored (not for an
    /// answer ending with `error`, nor with retention off).
    var onRetained: ((RetentionOutcome) -> Void)? { get set }

    /// Keeps the answer once it ends with `done` (docs/DATA_MODEL.md §14). `owner` the
    /// `sub`, `ownerHash` its `OwnerHash`, `sid` the session, `createdMs` the start
    /// (unix ms), `wallClock` unix ms now. Call before the first event; a no-op with
    /// retention off.
    func retain(owner: String, ownerHash: String, sid: String, createdMs: UInt64, wallClock: @escaping () -> UInt64)
    /// The pieces (UTF-8 bytes, `StoredPiece`) and their lengths a continuation did not
    /// append itself, so its retained record holds the whole answer. After `retain`,
    /// before the first event.
    func seedRetention(text: [UInt8], pieces: [StoredPiece.Length])
    /// A lease refresh the store confirmed: known held until `untilMs` (loop ms).
    func leaseKnown(untilMs: UInt64)
    /// The owner confirmed its lease after a stall: known held until `untilMs` (loop ms);
    /// what waited is sent.
    func leaseConfirmed(untilMs: UInt64)
    /// Whether the writer is held for the lease, starting the hold (and asking
    /// `onLeaseUnknown`) when the clock just passed it. Asked before numbering an event.
    func holdIfLeaseLapsed() -> Bool
    /// Queues event `seq` and sends it when ordering, the text and the lease allow: its
    /// JSON is written once here, its piece (`StoredPiece`) goes to the text, and a `done`
    /// or `error` ends the stream (`StreamState(endingWith:)`).
    func append(seq: UInt64, event: StreamEvent)
    /// Ends the writer's work: drops the callbacks, sends nothing more. Idempotent.
    func close()
}
