import Foundation
import RelayTestKit
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayCore
import RelayHTTP
@testable import RelayClient

/// A scripted relay behind a `URLProtocol`, so `RelayStream` runs its real
/// `URLSession` code against canned answers (no sockets).
final class MockRelay: @unchecked Sendable {
    /// How one request is answered.
    struct Reply {
        var status = 200
        var contentType = "text/event-stream"
        var chunks: [Data] = []
        /// Extra response headers (e.g. `Retry-After`).
        var headers: [String: String] = [:]
        /// `nil`: keep the connection open; `.some(nil)`: clean end; `.some(error)`: fail.
        var end: URLError?? = .some(nil)
    }

    /// A request as the relay saw it.
    struct Seen {
        var method: String
        var url: URL
        var headers: [String: String]
        var body: Data?
        /// A header, by case-insensitive name (URLSession may re-case names: `Last-Event-Id`).
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    private let lock = NSLock()
    private var handler: (URLRequest, Int) -> Reply = { _, _ in Reply() }
    private var seen: [Seen] = []
    nonisolated(unsafe) static var current: MockRelay?

    init() { MockRelay.current = self }

    func answer(_ h: @escaping (URLRequest, Int) -> Reply) { lock.withLock { handler = h } }

    var requests: [Seen] { lock.withLock { seen } }

    func reply(for request: URLRequest) -> Reply {
        lock.withLock {
            var body = request.httpBody
            if body == nil, let s = request.httpBodyStream {
                s.open()
                var d = Data()
                var buf = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = s.read(&buf, maxLength: buf.count)
                    if n <= 0 { break }
                    d.append(buf, count: n)
                }
                s.close()
                body = d
            }
            seen.append(Seen(method: request.httpMethod ?? "GET", url: request.url!, headers: request.allHTTPHeaderFields ?? [:], body: body))
            return handler(request, seen.count - 1)
        }
    }

    var configuration: URLSessionConfiguration {
        let c = URLSessionConfiguration.ephemeral
        c.protocolClasses = [MockURLProtocol.self]
        return c
    }

    /// SSE frames for `events` starting at `seq` `from`.
    static func frames(_ events: [StreamEvent], from: UInt64 = 1) -> String {
        var s = ""
        for (i, e) in events.enumerated() { s += SSEFrame.event(seq: from + UInt64(i), json: e.json) }
        return s
    }

    /// `text` split into bytes chunks of `size` (splitting UTF-8 sequences too).
    static func chunks(_ text: String, size: Int) -> [Data] {
        let bytes = Array(text.utf8)
        return stride(from: 0, to: bytes.count, by: size).map { Data(bytes[$0..<min(bytes.count, $0 + size)]) }
    }
}

final class MockURLProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let relay = MockRelay.current else { return }
        let r = relay.reply(for: request)
        let response = HTTPURLResponse(url: request.url!, statusCode: r.status, httpVersion: "HTTP/1.1",
                                       headerFields: r.headers.merging(["Content-Type": r.contentType]) { a, _ in a })!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        for c in r.chunks { client?.urlProtocol(self, didLoad: c) }
        switch r.end {
        case .none: break
        case .some(.none): client?.urlProtocolDidFinishLoading(self)
        case .some(.some(let e)): client?.urlProtocol(self, didFailWithError: e)
        }
    }

    /// An `{"error":{…}}` answer.
    static func error(_ status: Int, _ code: String, headers: [String: String] = [:]) -> MockRelay.Reply {
        .init(status: status, contentType: "application/json",
              chunks: [Data(#"{"error":{"code":"\#(code)","message":"\#(code)"}}"#.utf8)], headers: headers)
    }

    override func stopLoading() {}
}

/// Keeps a virtual clock moving (100 ms per real millisecond) while a stream runs, so
/// backoffs and ticks happen without real waiting of that length.
func withRunningClock<T>(_ clock: VirtualClock, _ body: () async throws -> T) async rethrows -> T {
    let pump = Task {
        while !Task.isCancelled {
            clock.advance(by: 100)
            try? await Task.sleep(nanoseconds: 1_000_000)   // pacing on purpose: the clock's rate, 100 ms per real ms
        }
    }
    defer { pump.cancel() }
    return try await body()
}

/// Collects all updates of a stream; fails the test (and stops the stream) when it has
/// not ended within `timeout` seconds of real time.
func collect(_ stream: RelayStream, timeout: Double = 10, file: StaticString = #filePath, line: UInt = #line) async -> [ChatUpdate] {
    let all = LockedBox<[ChatUpdate]>([]), ended = LockedBox(false)
    let reader = Task {
        for await u in stream { all.mutate { $0.append(u) } }
        ended.value = true
    }
    do {
        try await eventually(timeout, "the stream to end (updates so far: \(all.value.count))", every: 0.001,
                             file: file, line: line) { ended.value }
    } catch {
        stream.stop()
        reader.cancel()
    }
    return all.value
}

extension Array where Element == ChatUpdate {
    var renders: [RenderUpdate] { compactMap { if case .render(let r) = $0 { return r } else { return nil } } }
    var finalText: String { renders.last?.text ?? "" }
    var completion: Completion? { renders.last?.completion }
    var telemetry: TelemetryRecord? { if case .telemetry(let t)? = last { return t } else { return nil } }
}
