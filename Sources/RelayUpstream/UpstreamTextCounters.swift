import Synchronization

/// Process-wide counts of upstream content the relay repaired or skipped instead of failing
/// the answer (docs/UPSTREAMS.md). One instance is shared by the factories of all workers (pass
/// it to `HTTPUpstreamFactory`); `/metrics` reads it. Updates
/// are relaxed atomic adds (no lock).
public final class UpstreamTextCounters: Sendable {
    private let skipped = Atomic<Int>(0)
    private let replaced = Atomic<Int>(0)

    /// Creates counters at zero.
    public init() {}

    /// Stream chunks that were valid JSON of a shape the dialect does not document (not its
    /// error shape), skipped without ending the answer. Suggested metric name:
    /// `relay_upstream_chunks_skipped_total`.
    public var skippedChunks: Int { skipped.load(ordering: .relaxed) }

    /// Unpaired UTF-16 surrogate halves (escaped `\uD800`–`\uDFFF` that never found their
    /// other half, even across consecutive deltas) replaced by U+FFFD. Suggested metric name:
    /// `relay_upstream_unpaired_surrogates_total`.
    public var replacedSurrogateHalves: Int { replaced.load(ordering: .relaxed) }

    func addSkippedChunk() { skipped.add(1, ordering: .relaxed) }
    func addReplacedHalves(_ n: Int) { if n > 0 { replaced.add(n, ordering: .relaxed) } }
}
