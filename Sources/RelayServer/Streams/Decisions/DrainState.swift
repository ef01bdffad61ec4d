/// A worker's drain (docs/PROTOCOL.md §4, SIGTERM): once begun, the worker reports
/// itself drained exactly once, when no generation it owns is left running.
public struct DrainState: Sendable, Equatable {
    /// The drain has begun: no new streams, live responses ended.
    public private(set) var isDraining = false
    private var reported = false

    public init() {}

    /// Begins the drain (a second call changes nothing).
    public mutating func begin() { isDraining = true }

    /// Whether the drain is complete now, with `generationsLeft` still running: `true`
    /// once, the first time a draining worker has none left.
    public mutating func completes(generationsLeft: Int) -> Bool {
        guard isDraining, !reported, generationsLeft == 0 else { return false }
        reported = true
        return true
    }
}
