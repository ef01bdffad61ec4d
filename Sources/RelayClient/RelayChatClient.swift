import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayCore

/// The entry point of the client kit: starts chats against one or more relay
/// instances and reads the token budget (docs/PROTOCOL.md; `conformance/CLIENT_RULES.md`).
///
/// ```swift
/// let client = RelayChatClient(baseURLs: [URL(string: "https://relay.example")!],
///                              token: { try await auth.freshToken() })
/// let stream = client.startChat(ChatRequest(messages: [.init(role: "user", content: "Draft an NDA")]))
/// for await update in stream {
///     if case .render(let u) = update { textView.append(u.appended, direction: u.layout?.direction) }
/// }
/// ```
public final class RelayChatClient: Sendable {
    /// Why the kit asks the token provider for a bearer token.
    public enum TokenReason: Sendable, Equatable {
        /// A connection, reconnection or `DELETE` is about to be made: a cached token is fine.
        case connect
        /// The relay said the token expired (`token_expired`, or a 401 to a
        /// reconnection): return a freshly issued one. Asked once per expiry.
        case expired
    }

    /// Relay base URLs (`https://host:port`); reconnections rotate through them, so a
    /// stream resumes on another instance when one is gone.
    public let baseURLs: [URL]
    /// Returns a bearer token; called on every connection and reconnection, with
    /// `.expired` once per expiry.
    public let tokenProvider: @Sendable (TokenReason) async throws -> String
    /// Time source (ms); inject a virtual clock in tests. Its clock must keep advancing
    /// while the device sleeps (the 5-minute idle rule).
    public let clock: any RelayClock
    /// Receives one record per finished answer (never content).
    public let telemetry: TelemetrySink?
    /// The HTTP stack.
    public let transport: any RelayTransport
    /// The random source of the reconnection waits: a draw in [0, 1), clamped into it
    /// (`ReconnectPolicy.connectionLost(random:now:)` turns it into a wait).
    let random: @Sendable () -> Double
    let budgetBox = LockedBox<BudgetState?>(nil)
    let stops = StopDelivery()
    /// The read mode and whether a buffering proxy switched this client to long-poll.
    let reads = ReadState()

    /// - Parameters:
    ///   - baseURLs: at least one relay base URL.
    ///   - tokenProvider: the bearer token source, asked on every (re)connection with
    ///     `.connect` and, once per expiry, with `.expired`.
    ///   - clock: the time source, `SystemClock()` by default.
    ///   - telemetry: the telemetry hook.
    ///   - transport: the HTTP stack, `URLSessionTransport()` by default.
    ///   - random: the random source of the reconnection waits, a draw in [0, 1) (uniform by
    ///     default; a fixed value in tests): the first reconnection after a drop waits
    ///     `floor(r × (backoff + 1))` ms, later ones `backoff + floor(r × 251)` ms
    ///     (conformance/CLIENT_RULES.md "Reconnect decisions").
    public init(baseURLs: [URL], tokenProvider: @escaping @Sendable (TokenReason) async throws -> String,
                clock: any RelayClock = SystemClock(), telemetry: TelemetrySink? = nil,
                transport: any RelayTransport = URLSessionTransport(),
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        precondition(!baseURLs.isEmpty, "RelayChatClient needs at least one base URL")
        self.baseURLs = baseURLs
        self.tokenProvider = tokenProvider
        self.clock = clock
        self.telemetry = telemetry
        self.transport = transport
        self.random = random
    }

    /// A client whose token closure is asked on every connection (it must return a
    /// fresh token when the last one expired), over `URLSession` with `configuration`
    /// (e.g. with test `protocolClasses`).
    public convenience init(baseURLs: [URL], token: @escaping @Sendable () async throws -> String,
                            clock: any RelayClock = SystemClock(), telemetry: TelemetrySink? = nil,
                            configuration: URLSessionConfiguration = .default,
                            random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.init(baseURLs: baseURLs, tokenProvider: { _ in try await token() }, clock: clock, telemetry: telemetry,
                  transport: URLSessionTransport(configuration: configuration), random: random)
    }

    /// Options of one chat.
    public struct ChatOptions: Sendable {
        /// The stream's id (`X-Request-Id`); random by default.
        public var requestId: RequestID
        /// The number of clauses when the app knows it (draft progress total).
        public var expectedSections: Int?
        /// The network as the device reports it (warning, backoff, summary mode).
        public var network: NetworkConditions?
        /// For demos and tests: cut the connection once, after this many events, to
        /// show a resume.
        public var dropAfterEvents: Int?
        /// Index into `baseURLs` of the first connection.
        public var firstURLIndex: Int

        public init(requestId: RequestID = .random(), expectedSections: Int? = nil, network: NetworkConditions? = nil,
                    dropAfterEvents: Int? = nil, firstURLIndex: Int = 0) {
            self.requestId = requestId
            self.expectedSections = expectedSections
            self.network = network
            self.dropAfterEvents = dropAfterEvents
            self.firstURLIndex = firstURLIndex
        }
    }

    /// Starts a chat: sends `POST /api/chat/stream` at once and returns the stream of
    /// its updates. When `network` suggests summary mode the app decides; use
    /// `NetworkAdvice.applySummaryMode(to:)` before calling.
    public func startChat(_ request: ChatRequest, options: ChatOptions = ChatOptions()) -> RelayStream {
        RelayStream(client: self, request: request, options: options, priorReconnections: 0)
    }

    /// The budget last read or updated (`fetchBudget()` and each `done`).
    public var budget: BudgetState? { budgetBox.value }

    /// `GET /api/budget`: the caller's budget; also remembered in `budget`.
    /// - Throws: `APIError` for a non-200 answer (its `{"error":{…}}` body), a transport
    ///   error, or `BudgetDecodingError`.
    public func fetchBudget() async throws -> BudgetState {
        var lastError: Error = APIError(status: 0, code: "unreachable", message: "no relay reachable")
        for base in baseURLs {
            let req = TransportRequest(method: "GET", url: base.appendingPathComponent("api/budget"),
                                       headers: [("Authorization", "Bearer \(try await tokenProvider(.connect))")],
                                       timeoutMs: 10_000)
            do {
                let (status, body) = try await transport.fetch(req)
                guard status == 200 else { throw Self.apiError(status: status, body: body) }
                let b = try BudgetState(json: body)
                budgetBox.value = b
                return b
            } catch let e as APIError where e.status != 0 {
                throw e
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// `DELETE /api/chat/stream/{requestId}`: at most `StopDelivery.maxAttempts` (3)
    /// attempts, `StopDelivery.retryDelayMs` (1 s, on `clock`) apart, each with a 10 s
    /// timeout, rotating through the base URLs from `preferredURLIndex`. Returns the
    /// HTTP status of the first final answer (202 when accepted, `"state":"pending"` when
    /// the relay had not seen the stream yet and keeps the cancel for it), or `nil` when
    /// no attempt was answered (or no token could be had). A `404` is retried like a
    /// failure (`StopDelivery.retriesNotFound`: a relay that does not keep cancels may
    /// not have seen the `POST` yet) and returned when every attempt got it.
    @discardableResult
    public func cancel(requestId: RequestID, preferredURLIndex: Int = 0) async -> Int? {
        var notFound = false
        for attempt in 0..<StopDelivery.maxAttempts {
            if attempt > 0 { try? await clock.sleep(ms: StopDelivery.retryDelayMs) }
            let base = baseURLs[((preferredURLIndex + attempt) % baseURLs.count + baseURLs.count) % baseURLs.count]
            guard let t = try? await tokenProvider(.connect) else { return notFound ? 404 : nil }
            let req = TransportRequest(method: "DELETE", url: base.appendingPathComponent("api/chat/stream/\(requestId.value)"),
                                       headers: [("Authorization", "Bearer \(t)")], timeoutMs: StopDelivery.timeoutMs)
            stops.attempted()
            if let (status, _) = try? await transport.fetch(req), status > 0, status < 500 {
                guard StopDelivery.retriesNotFound(status: status) else { return status }
                notFound = true
            }
        }
        return notFound ? 404 : nil
    }

    /// Sends the `DELETE` of a stopped answer in the background (see `cancel`) and
    /// counts the outcome in `stopDeliveries`.
    func deliverStop(requestId: RequestID, preferredURLIndex: Int) {
        stops.start { await self.cancel(requestId: requestId, preferredURLIndex: preferredURLIndex) != nil }
    }

    /// What became of the `DELETE`s sent for stopped answers (the UI never waits for them).
    public var stopDeliveries: StopDelivery.Counts { stops.counts }

    /// Waits until every `DELETE` started so far has been answered or given up (a CLI
    /// calls it before exiting; an app need not).
    public func waitForStopDeliveries() async {
        for t in stops.pending() { await t.value }
    }

    /// Decodes `{"error":{"code","message"}}`; a generic error when the body is not that.
    static func apiError(status: Int, body: Data) -> APIError {
        if let obj = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
           let e = obj["error"] as? [String: Any], let code = e["code"] as? String {
            return APIError(status: status, code: ErrorCode(rawValue: code), message: e["message"] as? String ?? "")
        }
        return APIError(status: status, code: ErrorCode(rawValue: "http_\(status)"), message: "HTTP \(status)")
    }
}
