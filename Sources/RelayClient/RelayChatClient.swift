import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayCore

/// The entry point of the client kit: starts chats against one or more relay
/// instances and reads the token budget (DESIGN §2, §8; issue 5).
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
    /// Relay base URLs (`https://host:port`); reconnections rotate through them, so a
    /// stream resumes on another instance when one is gone.
    public let baseURLs: [URL]
    /// Returns a bearer token; called on every connection and reconnection.
    public let token: @Sendable () async throws -> String
    /// Time source (ms); inject a virtual clock in tests.
    public let clock: any RelayClock
    /// Receives one record per finished answer (never content).
    public let telemetry: TelemetrySink?
    let configuration: URLSessionConfiguration
    let budgetBox = LockedBox<BudgetState?>(nil)

    /// - Parameters:
    ///   - baseURLs: at least one relay base URL.
    ///   - token: the bearer token source, asked on every (re)connection.
    ///   - clock: the time source, `SystemClock()` by default.
    ///   - telemetry: the telemetry hook.
    ///   - configuration: the `URLSession` configuration (e.g. with test `protocolClasses`).
    ///     Its request timeout is raised to at least 40 s — longer than two of the relay's
    ///     15 s heartbeats, so only a dead connection times out.
    public init(baseURLs: [URL], token: @escaping @Sendable () async throws -> String,
                clock: any RelayClock = SystemClock(), telemetry: TelemetrySink? = nil,
                configuration: URLSessionConfiguration = .default) {
        precondition(!baseURLs.isEmpty, "RelayChatClient needs at least one base URL")
        self.baseURLs = baseURLs
        self.token = token
        self.clock = clock
        self.telemetry = telemetry
        let c = configuration
        c.timeoutIntervalForRequest = max(c.timeoutIntervalForRequest, 40)
        c.requestCachePolicy = .reloadIgnoringLocalCacheData
        c.urlCache = nil
        self.configuration = c
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
            var req = URLRequest(url: base.appendingPathComponent("api/budget"))
            req.setValue("Bearer \(try await token())", forHTTPHeaderField: "Authorization")
            do {
                let (status, body) = try await HTTPFetch.perform(req, configuration: configuration)
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

    /// `DELETE /api/chat/stream/{requestId}`, trying each base URL until one answers.
    /// Returns the HTTP status (202 when accepted), or `nil` when none answered.
    @discardableResult
    public func cancel(requestId: RequestID, preferredURLIndex: Int = 0) async -> Int? {
        for k in 0..<baseURLs.count {
            let base = baseURLs[(preferredURLIndex + k) % baseURLs.count]
            var req = URLRequest(url: base.appendingPathComponent("api/chat/stream/\(requestId.value)"))
            req.httpMethod = "DELETE"
            req.timeoutInterval = 10
            guard let t = try? await token() else { return nil }
            req.setValue("Bearer \(t)", forHTTPHeaderField: "Authorization")
            if let (status, _) = try? await HTTPFetch.perform(req, configuration: configuration) { return status }
        }
        return nil
    }

    /// Decodes `{"error":{"code","message"}}`; a generic error when the body is not that.
    static func apiError(status: Int, body: Data) -> APIError {
        if let obj = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
           let e = obj["error"] as? [String: Any], let code = e["code"] as? String {
            return APIError(status: status, code: code, message: e["message"] as? String ?? "")
        }
        return APIError(status: status, code: "http_\(status)", message: "HTTP \(status)")
    }
}
