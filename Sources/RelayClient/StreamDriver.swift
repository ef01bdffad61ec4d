import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayCore

/// What the driver reacts to.
enum StreamInput: Sendable {
    case tick
    /// The wait before long-poll read `id` is over.
    case pollDue(id: Int)
    /// An event of connection `id`, stamped with the clock time it arrived (ms).
    case connection(id: Int, ConnectionEvent, at: Int64)
    case stop
    /// The app's state changed at this clock time (ms, stamped when the app said so).
    case background(at: Int64)
    case foreground(at: Int64)
}

/// Runs one `RelayStream`. All mutable state is confined to `run(_:)`'s task (inputs
/// arrive through an `AsyncStream`), hence `@unchecked Sendable`.
final class StreamDriver: @unchecked Sendable {
    private let client: RelayChatClient
    private let request: ChatRequest
    private let options: RelayChatClient.ChatOptions
    private let priorReconnections: Int
    private let output: AsyncStream<ChatUpdate>.Continuation
    private let inputs: AsyncStream<StreamInput>.Continuation
    private let shared: LockedBox<(completion: Completion?, reconnections: Int)>
    private var clock: any RelayClock { client.clock }

    private var policy: ReconnectPolicy
    private var renderer: ResponseRenderer
    /// The answer's typed parts so far (each part event once: seqs already had are skipped),
    /// shared with `RelayStream.parts`.
    private let parts: LockedBox<AnswerParts>
    private var parser = SSEParser()
    private let startedAt: Int64
    private var connection: (any TransportConnection)?
    private var connectionID = 0
    private var connectStartedAt: Int64 = 0
    private var urlIndex: Int
    private var errorStatus: Int?
    private var errorBody = Data()
    private var errorContentType: String?
    private var errorRetryAfter: String?
    private var eventsReceived = 0
    private var dropped = false
    private var ended = false
    /// What the open connection is: an SSE response (`POST` or resume) or a long-poll read.
    private var readingLongPoll = false
    /// The buffering check of the open SSE response (`readMode` `.auto`).
    private var detector: ProxyBufferingDetector?
    /// The open long-poll read: its status, fields and body.
    private var pollStatus = 0
    private var pollFields = StreamReadHeaders()
    private var pollBody = Data()
    /// The last `Stream-Cursor`, sent back as `cursor` (Durable Streams §5.7).
    private var pollCursor: String?
    /// Largest long-poll body accepted, bytes (a whole answer is tens of kilobytes).
    static let maxPollBodyBytes = 16 << 20
    /// Shortest time between the sends of two long-poll reads when the first brought no
    /// event, ms (a relay waits up to `RELAY_LONG_POLL_TIMEOUT`, 20 s, before a 204).
    static let minPollIntervalMs: Int64 = 1_000
    private let reportedBackoff: Int64

    init(client: RelayChatClient, request: ChatRequest, options: RelayChatClient.ChatOptions, priorReconnections: Int,
         output: AsyncStream<ChatUpdate>.Continuation, inputs: AsyncStream<StreamInput>.Continuation,
         state: LockedBox<(completion: Completion?, reconnections: Int)>, parts: LockedBox<AnswerParts>) {
        self.client = client
        self.request = request
        self.options = options
        self.priorReconnections = priorReconnections
        self.output = output
        self.inputs = inputs
        self.shared = state
        self.parts = parts
        let now = client.clock.nowMs()
        startedAt = now
        reportedBackoff = options.network.map { NetworkAdvice($0).reconnectBackoffMs } ?? NetworkAdvice.normalBackoffMs
        policy = ReconnectPolicy(backoffMs: reportedBackoff)
        renderer = ResponseRenderer(now: now, expectedSections: options.expectedSections)
        urlIndex = options.firstURLIndex
    }

    func run(_ stream: AsyncStream<StreamInput>) async {
        let clock = self.clock
        let inputs = self.inputs
        let ticker = Task {
            while !Task.isCancelled {
                try? await clock.sleep(ms: RenderBuffer.intervalMs)
                inputs.yield(.tick)
            }
        }
        if let n = options.network {
            let advice = NetworkAdvice(n)
            if advice.warning != nil || advice.suggestsSummaryMode { output.yield(.advice(advice)) }
        }
        await perform(policy.start(now: clock.nowMs()))
        if !ended {
            for await input in stream {
                await handle(input)
                if ended && !renderer.isBackground { break }
            }
        }
        ticker.cancel()
        connection?.cancel()
        finishOutput()
    }

    // MARK: - Inputs

    private func handle(_ input: StreamInput) async {
        let now = clock.nowMs()
        switch input {
        case .tick:
            if let u = renderer.tick(now: now) { output.yield(.render(u)) }
            if var d = detector, d.deadline.map({ now >= $0 }) == true {
                d.tick(now: now)
                detector = d
                if case .longPoll(let reason) = d.verdict { return await switchToLongPoll(reason, now: now) }
            }
            await perform(policy.tick(now: now))
        case .pollDue(let id):
            guard id == connectionID, !ended else { return }
            await sendPoll(now: now)
        case .stop:
            await perform(policy.stop(now: now))
        case .background(let at):
            renderer.enterBackground()
            policy.enterBackground(now: min(at, now))
        case .foreground(let at):
            if let u = renderer.enterForeground(now: now) { output.yield(.render(u)) }
            await perform(policy.enterForeground(now: min(at, now)))
        case .connection(let id, let event, let at):
            guard id == connectionID, connection != nil else { return }
            await handle(event, now: min(at, now))
        }
    }

    private func handle(_ event: ConnectionEvent, now: Int64) async {
        switch event {
        case .response(let status, let contentType, let retryAfter, let fields):
            if now - connectStartedAt > Int64(NetworkAdvice.slowRttMs) {
                policy.backoffMs = max(reportedBackoff, NetworkAdvice.slowBackoffMs)
            }
            if readingLongPoll, status == 200, ReconnectPolicy.isEventStream(contentType) {
                // A relay without the long-poll read ignored `offset` and resumed over SSE
                // (from the start: the seqs already seen are skipped). This client reads
                // over SSE again and never switches back.
                client.reads.longPollUnsupported()
                readingLongPoll = false
            }
            if readingLongPoll, status == 200 || status == 204 {
                pollStatus = status
                pollFields = fields
                pollBody = Data()
                if let c = fields.cursor, !c.isEmpty { pollCursor = c }
                await perform(policy.pollOpened(status: status, contentType: contentType, closed: fields.closed, now: now))
            } else if status == 200 {
                let a = policy.responseOpened(status: status, contentType: contentType, now: now)
                guard case .streaming = policy.state else { return await perform(a) }
                if client.reads.longPoll {
                    // The POST started (or found) the answer; its events are read over long-poll.
                    dropConnection()
                    return await sendPoll(now: now)
                }
                output.yield(.connection(.streaming))
                if client.reads.mode == .auto {
                    var d = ProxyBufferingDetector(sentAt: connectStartedAt)
                    d.headers(at: now)
                    detector = d
                }
                await perform(a)
            } else {
                errorStatus = status
                errorContentType = contentType
                errorRetryAfter = retryAfter
                errorBody = Data()
            }
        case .data(let d):
            if errorStatus != nil {
                if errorBody.count < 65_536 { errorBody.append(d) }
                return
            }
            if readingLongPoll {
                pollBody.append(d)
                if pollBody.count > Self.maxPollBodyBytes {
                    dropConnection()
                    await perform(policy.connectionLost(random: client.random(), now: now))
                }
                return
            }
            let items: [SSEParser.Item]
            do {
                items = try parser.feed(d)
            } catch {
                dropConnection()
                return await perform(policy.connectionLost(random: client.random(), now: now))
            }
            if var det = detector, det.verdict == .undecided {
                var events = 0
                var terminal = false
                for case .event(let msg) in items {
                    events += 1
                    if (try? StreamEvent(json: msg.data))?.isTerminal == true { terminal = true }
                }
                let before = det.verdict
                det.read(at: now, bytes: d.count, events: events, terminal: terminal)
                detector = det
                if before == .undecided, case .longPoll(let reason) = det.verdict {
                    if reason == .silentAfterHeaders { return await switchToLongPoll(reason, now: now) }
                    // A whole body: its events are all here and end this answer; later reads use long-poll.
                    client.reads.buffered(reason)
                    output.yield(.connection(.longPoll(reason: reason, lastEventId: policy.lastEventId)))
                }
            }
            for item in items {
                guard case .event(let msg) = item, !ended else { continue }
                await received(msg, now: now)
                if connection == nil { break }   // dropped or finished
            }
        case .end(let error):
            connection = nil
            if let status = errorStatus {
                errorStatus = nil
                let e = RelayChatClient.apiError(status: status, body: errorBody)
                return await perform(policy.responseOpened(status: status, contentType: errorContentType, error: e,
                                                           retryAfterMs: ReconnectPolicy.retryAfterMs(errorRetryAfter),
                                                           random: client.random(), now: now))
            }
            if readingLongPoll {
                if error != nil { return await perform(policy.connectionLost(random: client.random(), now: now)) }
                return await pollEnded(now: now)
            }
            _ = parser.finish()   // an incomplete event is discarded with its id (WHATWG §9.2.6)
            if var d = detector {
                detector = nil
                if case .longPoll(let reason) = d.ended(at: now) {
                    return await switchToLongPoll(reason, now: now)
                }
            }
            await perform(policy.connectionLost(random: client.random(), now: now))
        }
    }

    private func received(_ msg: SSEMessage, now: Int64) async {
        let seq = UInt64(msg.lastEventId)
        let event = try? StreamEvent(json: msg.data)
        // Already seen (defensive; the relay drops these) — except a terminal event: the
        // relay's mid-stream `error` (session_revoked, token_expired) repeats the last
        // delta's seq so that a resume skips nothing, and must not be taken for a drop.
        if let seq, seq <= policy.lastEventId, event?.isTerminal != true { return }
        let action = policy.eventReceived(seq: seq, event: event, random: client.random(), now: now)
        eventsReceived += 1
        if let event, !Self.isTokenExpiry(event) {
            let limited = BudgetLimitedFlag.isSet(inEventJSON: msg.data)
            if let u = renderer.receive(event, budgetLimited: limited, now: now) { output.yield(.render(u)) }
            if case .part(let p) = event, renderer.completion == nil { output.yield(.parts(parts.mutate { $0.receive(p) })) }
            if case .done(_, let usage, _) = event {
                let b = client.budgetBox.mutate { (b: inout BudgetState?) -> BudgetState? in
                    b?.apply(usage, budgetLimited: limited)
                    return b
                }
                if let b { output.yield(.budget(b)) }
            }
        }
        await perform(action)
        if let n = options.dropAfterEvents, !dropped, !ended, eventsReceived >= n {
            dropped = true
            dropConnection()
            await perform(policy.connectionLost(random: client.random(), now: now))
        }
    }

    /// `token_expired` is not the end of the answer: the renderer never sees it.
    static func isTokenExpiry(_ e: StreamEvent) -> Bool {
        if case .error(_, "token_expired", _) = e { return true }
        return false
    }

    // MARK: - Actions

    private func perform(_ action: ReconnectPolicy.Action) async {
        switch action {
        case .none:
            break
        case .sendRequest:
            let url = baseURL
            output.yield(.connection(.connecting(url: url)))
            await connect(post: true, lastEventId: 0)
        case .reconnect(let last):
            urlIndex += 1
            if case .connecting(let attempt) = policy.state {
                output.yield(.connection(.reconnecting(attempt: attempt, url: baseURL, lastEventId: last)))
            }
            await connect(post: last == 0, lastEventId: last)
        case .wait:
            if case .waiting(let attempt, _) = policy.state {
                output.yield(.connection(.waitingToReconnect(attempt: attempt, delayMs: policy.waitMs)))
            }
        case .stop:
            dropConnection()
            complete(.stopped)
            client.deliverStop(requestId: options.requestId, preferredURLIndex: urlIndex)
        case .finish(let c):
            dropConnection()
            complete(c)
        }
    }

    /// `…/api/chat/stream/{id}?offset=<last event id, -1 before any>&live=long-poll[&cursor=…]`.
    private func pollURL(after lastEventId: UInt64) -> URL {
        let u = baseURL.appendingPathComponent("api/chat/stream/\(options.requestId.value)")
        var c = URLComponents(url: u, resolvingAgainstBaseURL: false)!
        var q = [URLQueryItem(name: "offset", value: lastEventId > 0 ? String(lastEventId) : "-1"),
                 URLQueryItem(name: "live", value: "long-poll")]
        if let cursor = pollCursor { q.append(URLQueryItem(name: "cursor", value: cursor)) }
        c.queryItems = q
        return c.url ?? u
    }

    private var baseURL: URL { client.baseURLs[((urlIndex % client.baseURLs.count) + client.baseURLs.count) % client.baseURLs.count] }

    private func connect(post: Bool, lastEventId: UInt64, longPoll: Bool = false) async {
        connectionID += 1
        let id = connectionID
        parser = SSEParser()
        errorStatus = nil
        detector = nil
        let longPoll = longPoll || (!post && client.reads.longPoll)
        readingLongPoll = longPoll
        let token: String
        do {
            if policy.freshTokenNeeded {
                policy.freshTokenFetched()
                token = try await client.tokenProvider(.expired)
            } else {
                token = try await client.tokenProvider(.connect)
            }
        } catch {
            let e = APIError.unauthorized("no bearer token: \(error)")
            return await perform(policy.responseOpened(status: 401, contentType: nil, error: e, now: clock.nowMs()))
        }
        guard id == connectionID, !ended else { return }   // stopped while fetching the token
        var headers: [(name: String, value: String)] = [
            ("Authorization", "Bearer \(token)"),
            ("Accept", "text/event-stream"),
            ("X-Request-Id", options.requestId.value),
            ("Cache-Control", "no-store"),
        ]
        let req: TransportRequest
        if post {
            headers.append(("Content-Type", "application/json"))
            req = TransportRequest(method: "POST", url: baseURL.appendingPathComponent("api/chat/stream"), headers: headers,
                                   body: request.jsonBody)
        } else if longPoll {
            headers[1] = ("Accept", "application/json")
            req = TransportRequest(method: "GET", url: pollURL(after: lastEventId), headers: headers)
        } else {
            headers.append(("Last-Event-ID", String(lastEventId)))
            req = TransportRequest(method: "GET", url: baseURL.appendingPathComponent("api/chat/stream/\(options.requestId.value)"),
                                   headers: headers)
        }
        connectStartedAt = clock.nowMs()
        let inputs = self.inputs
        let clock = self.clock
        connection = client.transport.stream(req) { event in
            inputs.yield(.connection(id: id, event, at: clock.nowMs()))
        }
    }

    // MARK: - Long-poll

    /// A buffered SSE response: this client reads over long-poll from now on, and this
    /// answer goes on from its last event id at once (no wait, not a reconnection).
    private func switchToLongPoll(_ reason: ProxyBufferingDetector.Reason, now: Int64) async {
        client.reads.buffered(reason)
        detector = nil
        output.yield(.connection(.longPoll(reason: reason, lastEventId: policy.lastEventId)))
        dropConnection()
        guard !ended else { return }
        await sendPoll(now: now)
    }

    /// Sends the next long-poll read from the last event id.
    private func sendPoll(now: Int64) async {
        policy.pollSent(now: now)
        await connect(post: false, lastEventId: policy.lastEventId, longPoll: true)
    }

    /// A long-poll read ended cleanly: a `200`'s JSON array goes through the same event
    /// path as SSE events (its last element's seq is `Stream-Next-Offset`; the others are
    /// strictly between the offsets, PROTOCOL.md §5.1); then the next read, at once after
    /// events, else no sooner than `minPollIntervalMs` after the last send.
    ///
    /// The array is read with `LenientJSON` and each element handed on as its compact JSON,
    /// so an event read here is the event an SSE response carries: a part's `input` or
    /// `data` keeps its members' order and its number literals, and a string every U+FEFF
    /// (swift-corelibs-foundation's `JSONSerialization` drops one at the start of a string,
    /// see `StreamEvent(jsonData:)`).
    private func pollEnded(now: Int64) async {
        guard case .streaming = policy.state else { return }
        var got = 0
        if pollStatus == 200 {
            let next = pollFields.nextOffset.flatMap { $0.count <= 20 && $0.allSatisfy(\.isASCII) ? UInt64($0) : nil }
            guard case .array(let array)? = try? LenientJSON.parse(pollBody), let next else {
                return await perform(policy.connectionLost(random: client.random(), now: now))
            }
            got = array.count
            let id = connectionID
            for (i, element) in array.enumerated() {
                guard !ended, id == connectionID else { return }
                let seq = i == array.count - 1 ? String(next) : ""
                await received(SSEMessage(type: "message", data: element.compactJSON, lastEventId: seq), now: now)
            }
            guard !ended, id == connectionID else { return }
            if pollFields.closed { return await perform(policy.streamClosed(now: now)) }
        }
        let delay = got > 0 ? 0 : Self.minPollIntervalMs - (now - connectStartedAt)
        if delay <= 0 { return await sendPoll(now: now) }
        connectionID += 1
        let id = connectionID
        let inputs = self.inputs
        let clock = self.clock
        Task {
            try? await clock.sleep(ms: delay)
            inputs.yield(.pollDue(id: id))
        }
    }

    private func dropConnection() {
        connectionID += 1   // events of the old connection are ignored from now on
        detector = nil
        connection?.cancel()
        connection = nil
    }

    private func complete(_ c: Completion) {
        guard !ended else { return }
        ended = true
        if let u = renderer.finish(c, now: clock.nowMs()) { output.yield(.render(u)) }
        shared.mutate { $0 = (c, priorReconnections + policy.reconnections) }
    }

    private func finishOutput() {
        let latency = renderer.firstTokenAt.map { Int($0 - startedAt) } ?? 0
        let record = TelemetryRecord(requestId: options.requestId.value, tokensReceived: renderer.tokensReceived,
                                     latencyMs: latency, reconnections: priorReconnections + policy.reconnections)
        client.telemetry?(record)
        output.yield(.telemetry(record))
        output.finish()
        inputs.finish()
    }
}
