import Foundation
import RelayCore
import RelayTestKit
@testable import RelayClient

/// A `RelayTransport` the test drives by hand: each streaming request is recorded and
/// answered by calls to `send(_:to:)`; each one-shot request waits for `answerFetch`.
/// With a `VirtualClock`, every step is deterministic (no real waiting).
final class ScriptedTransport: RelayTransport, @unchecked Sendable {
    struct Connection {
        var request: TransportRequest
        var onEvent: @Sendable (ConnectionEvent) -> Void
    }
    final class Handle: TransportConnection, @unchecked Sendable {
        let cancelled = LockedBox(false)
        func cancel() { cancelled.value = true }
    }

    private let lock = NSLock()
    private var connections: [Connection] = []
    private var fetches: [(TransportRequest, CheckedContinuation<(status: Int, body: Data), Error>)] = []
    private var fetchRequests: [TransportRequest] = []

    func stream(_ request: TransportRequest, onEvent: @escaping @Sendable (ConnectionEvent) -> Void) -> any TransportConnection {
        lock.withLock { connections.append(Connection(request: request, onEvent: onEvent)) }
        return Handle()
    }

    func fetch(_ request: TransportRequest) async throws -> (status: Int, body: Data) {
        try await withCheckedThrowingContinuation { c in
            lock.withLock {
                fetches.append((request, c))
                fetchRequests.append(request)
            }
        }
    }

    /// Streaming requests made so far.
    var requests: [TransportRequest] { lock.withLock { connections.map(\.request) } }
    /// One-shot requests made so far.
    var fetched: [TransportRequest] { lock.withLock { fetchRequests } }

    /// Waits (real time, at most 5 s) until `count` streaming requests were made.
    func waitForRequests(_ count: Int, file: StaticString = #filePath, line: UInt = #line) async throws {
        try await waitUntil("\(count) streaming requests (have \(requests.count))", file: file, line: line) { self.requests.count >= count }
    }

    /// Waits until `count` one-shot requests were made.
    func waitForFetches(_ count: Int, file: StaticString = #filePath, line: UInt = #line) async throws {
        try await waitUntil("\(count) fetches (have \(fetched.count))", file: file, line: line) { self.fetched.count >= count }
    }

    /// Delivers events to streaming request `index`.
    func send(_ events: [ConnectionEvent], to index: Int) {
        let c = lock.withLock { connections[index] }
        for e in events { c.onEvent(e) }
    }

    /// A 200 `text/event-stream` head and `frames` as one chunk.
    func open(_ index: Int, frames: String = "") {
        send([.response(status: 200, contentType: "text/event-stream", retryAfter: nil)] + (frames.isEmpty ? [] : [.data(Data(frames.utf8))]), to: index)
    }

    /// An `{"error":{…}}` answer, whole.
    func refuse(_ index: Int, status: Int, code: String, retryAfter: String? = nil) {
        send([.response(status: status, contentType: "application/json", retryAfter: retryAfter),
              .data(Data(#"{"error":{"code":"\#(code)","message":"\#(code)"}}"#.utf8)), .end(error: nil)], to: index)
    }

    /// Answers the oldest pending one-shot request (or fails it with `error`).
    func answerFetch(status: Int, error: Error? = nil) async throws {
        try await waitUntil("a pending fetch") { lock.withLock { !fetches.isEmpty } }
        let (_, c) = lock.withLock { fetches.removeFirst() }
        if let error { c.resume(throwing: error) } else { c.resume(returning: (status, Data())) }
    }

    /// Waits (real time, at most 5 s) until `cond` holds; `what` is read at the timeout.
    private func waitUntil(_ what: @autoclosure () -> String, file: StaticString = #filePath, line: UInt = #line,
                           _ cond: () -> Bool) async throws {
        try await eventually(5, what(), every: 0.001, file: file, line: line) { cond() }
    }
}

/// Collects a stream's updates in the background so a test can look at them while it runs.
final class UpdateLog: @unchecked Sendable {
    private let box = LockedBox<[ChatUpdate]>([])
    private var task: Task<Void, Never>?

    init(_ stream: RelayStream) {
        let box = self.box
        task = Task { for await u in stream { box.mutate { $0.append(u) } } }
    }

    var updates: [ChatUpdate] { box.value }

    /// Waits (real time, at most 5 s) until `cond` holds for the updates so far.
    func wait(_ what: String, _ cond: @escaping ([ChatUpdate]) -> Bool) async throws {
        try await eventually(5, "\(what); updates \(self.updates)", every: 0.001) { cond(self.updates) }
    }

    /// Waits for the end of the stream (its telemetry record).
    func finished() async throws -> [ChatUpdate] {
        try await wait("the end of the stream") { $0.telemetry != nil }
        return updates
    }
}
