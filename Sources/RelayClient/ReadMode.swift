import Foundation
import RelayCore

/// How a `RelayChatClient` reads the events of its answers.
public enum ReadMode: Sendable, Equatable {
    /// Server-sent events; long-poll for the rest of the client's life once a response
    /// looks buffered by a proxy (`ProxyBufferingDetector`). The default.
    case auto
    /// Server-sent events only: never switch.
    case sse
    /// Long-poll from the start: each answer is started by its `POST`, whose events are
    /// then read with `GET /api/chat/stream/{id}?offset=…&live=long-poll`.
    case longPoll
}

/// The read state one client's streams share: a buffered response switches every later
/// read of the client to long-poll.
final class ReadState: Sendable {
    private let box = LockedBox<(mode: ReadMode, longPoll: Bool, reason: ProxyBufferingDetector.Reason?)>((.auto, false, nil))

    var mode: ReadMode {
        get { box.value.mode }
        set { box.mutate { $0.mode = newValue; $0.longPoll = $0.longPoll || newValue == .longPoll } }
    }

    /// `true` when reads go over long-poll.
    var longPoll: Bool { box.value.longPoll }
    var reason: ProxyBufferingDetector.Reason? { box.value.reason }

    /// A long-poll read was answered with an event stream: the relay has no long-poll
    /// read, so SSE from now on, without switching again.
    func longPollUnsupported() {
        box.mutate {
            $0.longPoll = false
            $0.mode = .sse
        }
    }

    /// A response of the client was buffered: long-poll from now on.
    func buffered(_ reason: ProxyBufferingDetector.Reason) {
        box.mutate {
            $0.longPoll = true
            if $0.reason == nil { $0.reason = reason }
        }
    }
}

extension RelayChatClient {
    /// How answers are read (`.auto` by default). Setting `.longPoll` switches at once for
    /// later reads; setting `.sse` or `.auto` does not undo a switch already made.
    public var readMode: ReadMode {
        get { reads.mode }
        set { reads.mode = newValue }
    }

    /// `true` once this client reads answers over long-poll: from the start
    /// (`readMode = .longPoll`) or since a response looked buffered by a proxy.
    public var readsOverLongPoll: Bool { reads.longPoll }

    /// Why this client switched to long-poll, when it did so by itself.
    public var bufferingDetected: ProxyBufferingDetector.Reason? { reads.reason }
}
