import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayCore

/// One chat answer being streamed, as an `AsyncSequence` of `ChatUpdate`s.
/// The sequence ends after the completion (the last `.render` carries it)
/// and the `.telemetry` record.
///
/// Behaviour (rules in `ReconnectPolicy`, `ResponseRenderer`):
/// * `POST /api/chat/stream` with `X-Request-Id`, streamed through the client's
///   `RelayTransport`; events parsed by `RelayCore.SSEParser`; `lastEventId` kept in memory.
/// * On a drop, a refused connection or a 502/503/504: wait, then `GET /api/chat/stream/{id}`
///   with `Last-Event-ID`, rotating through
///   the client's base URLs; at most 3 times, then the completion `needsResume`, and
///   `resume()` re-sends the whole request. The backoff is 1 s (3 s when the measured RTT —
///   request sent to response headers — or the reported one is over 500 ms). The first
///   reconnection after a drop waits a full jitter, uniform over 0…backoff; the 2nd and 3rd
///   in a row the backoff plus 0–250 ms; a 502/503/504 `max(Retry-After, backoff)` plus
///   0–250 ms (`ReconnectPolicy.dropWaitMs`).
/// * A buffered SSE response (`ProxyBufferingDetector`: a head without a byte for 20 s,
///   or the whole body in one read at the end) switches the client to long-poll reads
///   (`GET /api/chat/stream/{id}?offset=<lastEventId>&live=long-poll`, `-1` before any
///   event) for the rest of its life; this answer goes on at once from `lastEventId`. A
///   read's JSON array goes through the same event path as SSE events; a `204` reads
///   again; errors are handled as on a resume (`ReconnectPolicy.pollOpened`).
/// * The bearer token is asked from the client's provider on every connection; after
///   `token_expired` it is asked with `.expired` and the answer resumes.
/// * In the background a drop waits; `enterForeground()` resumes at once.
/// * `stop()` completes the answer as `stopped` at once; the `DELETE` goes out in the
///   background (`RelayChatClient.stopDeliveries`); a stop is never taken for a drop.
///
/// The state lives in one task (`StreamDriver.run`); the public methods only post
/// inputs to it, so they may be called from any thread.
public final class RelayStream: AsyncSequence, Sendable {
    public typealias Element = ChatUpdate
    public typealias AsyncIterator = AsyncStream<ChatUpdate>.Iterator

    /// The stream's id (`X-Request-Id`).
    public let requestId: RequestID
    /// The request as sent.
    public let request: ChatRequest

    private let client: RelayChatClient
    private let options: RelayChatClient.ChatOptions
    private let output: AsyncStream<ChatUpdate>
    private let inputs: AsyncStream<StreamInput>.Continuation
    private let state: LockedBox<(completion: Completion?, reconnections: Int)>
    private let partsBox = LockedBox(AnswerParts())

    init(client: RelayChatClient, request: ChatRequest, options: RelayChatClient.ChatOptions, priorReconnections: Int) {
        self.client = client
        self.request = request
        self.options = options
        self.requestId = options.requestId
        let (out, outC) = AsyncStream.makeStream(of: ChatUpdate.self, bufferingPolicy: .unbounded)
        let (inp, inC) = AsyncStream.makeStream(of: StreamInput.self, bufferingPolicy: .unbounded)
        output = out
        inputs = inC
        let st = LockedBox<(completion: Completion?, reconnections: Int)>((nil, priorReconnections))
        state = st
        let driver = StreamDriver(client: client, request: request, options: options, priorReconnections: priorReconnections,
                                  output: outC, inputs: inC, state: st, parts: partsBox)
        Task { await driver.run(inp) }
    }

    public func makeAsyncIterator() -> AsyncStream<ChatUpdate>.Iterator { output.makeAsyncIterator() }

    /// How the answer ended, once it has.
    public var completion: Completion? { state.value.completion }

    /// The answer's typed parts received so far (docs/PROTOCOL.md §5.5): the state the last
    /// `ChatUpdate.parts` update carried.
    public var parts: AnswerParts { partsBox.value }

    /// Stops generating: cancels the connection and sends `DELETE
    /// /api/chat/stream/{requestId}`; the answer completes as `stopped`.
    public func stop() { inputs.yield(.stop) }

    /// The app went to the background: render updates pause (the stream keeps reading
    /// while the system lets it); the hard timeout pauses; a drop waits for the foreground.
    public func enterBackground() { inputs.yield(.background(at: client.clock.nowMs())) }

    /// The app is back: everything buffered is replayed in one update; after a drop in
    /// the background the stream resumes at once from `lastEventId` (within 5 minutes
    /// of the last event, else `needsResume`).
    public func enterForeground() { inputs.yield(.foreground(at: client.clock.nowMs())) }

    /// The manual Resume / Retry: re-sends the whole request as a new stream (new
    /// request id, next base URL); its telemetry counts this as a reconnection.
    public func resume() -> RelayStream {
        var o = options
        o.requestId = .random()
        o.firstURLIndex = options.firstURLIndex + 1
        o.dropAfterEvents = nil
        return RelayStream(client: client, request: request, options: o, priorReconnections: state.value.reconnections + 1)
    }
}
