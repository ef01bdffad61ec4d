/// Whether the transcript follows new text. A small model the UI
/// drives from its scroll view: following pauses as soon as the user scrolls up and
/// resumes when they come back to the bottom.
///
/// Distances are in points (the UI's unit); "at the bottom" means within
/// `bottomTolerance` of it.
public struct AutoScroll: Sendable, Equatable {
    /// Distance from the bottom still counted as "at the bottom", points.
    public var bottomTolerance: Double
    /// `true` while new text should scroll the view to the bottom.
    public private(set) var isFollowing = true

    public init(bottomTolerance: Double = 24) {
        self.bottomTolerance = bottomTolerance
    }

    /// The user moved the view; `distanceFromBottom` ≥ 0 is how far its bottom edge is
    /// above the end of the content.
    public mutating func userScrolled(distanceFromBottom: Double) {
        isFollowing = distanceFromBottom <= bottomTolerance
    }

    /// `true` when an update should scroll to the bottom.
    public var shouldScrollOnUpdate: Bool { isFollowing }

    /// `true` when a "jump to latest" button makes sense.
    public var showsJumpToLatest: Bool { !isFollowing }

    /// The user tapped "jump to latest".
    public mutating func jumpToLatest() { isFollowing = true }
}
