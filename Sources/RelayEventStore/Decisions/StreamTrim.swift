/// How a stream's appends keep it at no more than `maxLen` entries (`RELAY_BUFFER_EVENTS`)
/// while trimming only on some of them (docs/DATA_MODEL.md §2).
///
/// An exact trim (`XADD … MAXLEN <n>`, Redis `XADD`/`XTRIM` docs: without `~` the stream
/// is trimmed to exactly `n`) re-walks the oldest listpack node of the stream, entry by
/// entry, each time it runs: ≈ 3–4.5 µs of Redis CPU per `XADD` with the default
/// `stream-node-max-entries 100`, whether it removes one entry or many. So only every
/// `step`-th event trims, and it trims to `maxLen − step + 1`: after it the stream holds
/// `maxLen − step + 1` entries, the next `step − 1` events (no trim) bring it to exactly
/// `maxLen`, and the next trimming `XADD` adds one and trims back in the same command.
/// The stream never holds more than `maxLen` entries (the cap stays exact: no `~`); it
/// always retains at least `minRetained` (the newest). Scripts that append (the final
/// event, a lease expiry) trim with `MAXLEN maxLen`.
///
/// Pure: no I/O; which events trim depends only on the seq, so a resend trims alike.
public struct StreamTrim: Sendable, Equatable {
    /// The cap, entries (`XADD MAXLEN`, exact).
    public let maxLen: Int
    /// Every `step`-th seq trims (1: every event, as a plain exact `MAXLEN`).
    public let step: Int

    /// `step`: 8 for the default cap of 200 (at most a sixteenth of the cap), 1 for caps
    /// under 32.
    public init(maxLen: Int) {
        self.maxLen = max(1, maxLen)
        step = max(1, min(8, self.maxLen / 16))
    }

    /// The entry count a trimming `XADD` leaves (`MAXLEN` argument), entries.
    public var trimmedLength: Int { maxLen - step + 1 }

    /// The fewest entries the stream retains once it has held `maxLen`: the newest ones.
    public var minRetained: Int { trimmedLength }

    /// Whether the `XADD` of `seq` trims (`MAXLEN trimmedLength`).
    public func trims(seq: UInt64) -> Bool { seq % UInt64(step) == 0 }
}
