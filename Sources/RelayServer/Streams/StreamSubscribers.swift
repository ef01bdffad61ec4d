/// The subscriptions of one stream on one worker (`StreamHub`'s registry entry), in
/// attach order. A class so that the stream's running generation can hold its entry
/// (`Generation.subscribers`) and deliver each acknowledged event without looking the
/// stream up by its id (a `String`-keyed dictionary lookup per event would cost more than the delivery). The
/// hub keeps an entry while it has members or the stream's generation runs here.
/// Loop thread only.
final class StreamSubscribers {
    /// The subscriptions, in attach order (a handful per stream).
    /// Read for every delivered event: loop-thread confined and no mutation spans a call
    /// out, so not checked for exclusivity at run time (`swift_beginAccess`).
    @exclusivity(unchecked) private(set) var members: ContiguousArray<Subscription> = []

    var isEmpty: Bool { members.isEmpty }

    func insert(_ s: Subscription) {
        guard !members.contains(where: { $0 === s }) else { return }
        members.append(s)
    }

    /// Removes `s`; `false` when it was not a member.
    func remove(_ s: Subscription) -> Bool {
        guard let i = members.firstIndex(where: { $0 === s }) else { return false }
        members.remove(at: i)
        return true
    }
}
