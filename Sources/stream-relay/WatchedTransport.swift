import Foundation
import RelayClient
import RelayCore

/// A `RelayTransport` wrapper that remembers why the last exchange failed before any
/// response arrived — the relay could not be reached at all (refused, DNS, timed out) —
/// so `stream-relay chat` can say so with the URL, where the kit only reports a dropped
/// connection. Events and results pass through unchanged.
final class WatchedTransport: RelayTransport {
    /// The relay that could not be reached and why (`TransportFailure.description` for
    /// `CurlTransport` and one-shot requests, else the transport's message).
    struct Unreached: Sendable, Equatable {
        /// The relay's base URL.
        var url: URL
        var reason: String
    }

    let inner: any RelayTransport
    let baseURLs: [URL]
    private let last = LockedBox<Unreached?>(nil)

    init(_ inner: any RelayTransport, baseURLs: [URL]) {
        self.inner = inner
        self.baseURLs = baseURLs
    }

    /// The failure recorded since a response last arrived, if any; clears it.
    func takeUnreached() -> Unreached? {
        last.mutate { u in
            defer { u = nil }
            return u
        }
    }

    func stream(_ request: TransportRequest, onEvent: @escaping @Sendable (ConnectionEvent) -> Void) -> any TransportConnection {
        let responded = LockedBox(false)
        let cancelled = LockedBox(false)
        let base = base(of: request.url)
        let last = self.last
        let c = inner.stream(request) { event in
            switch event {
            case .response:
                responded.value = true
                last.value = nil
            case .end(let error?) where !responded.value && !cancelled.value:
                last.value = Unreached(url: base, reason: error)
            default:
                break
            }
            onEvent(event)
        }
        return Connection(inner: c, cancelled: cancelled)
    }

    func fetch(_ request: TransportRequest) async throws -> (status: Int, body: Data) {
        do {
            let r = try await inner.fetch(request)
            last.value = nil
            return r
        } catch {
            last.value = Unreached(url: base(of: request.url), reason: TransportFailure(error).description)
            throw error
        }
    }

    /// The base URL `url` was made from (the longest matching one), else `url` itself.
    private func base(of url: URL) -> URL {
        baseURLs.filter { url.absoluteString.hasPrefix($0.absoluteString) }
            .max { $0.absoluteString.count < $1.absoluteString.count } ?? url
    }

    /// Marks a connection the kit cancelled, so its `end` is not taken for a failure.
    private struct Connection: TransportConnection {
        let inner: any TransportConnection
        let cancelled: LockedBox<Bool>
        func cancel() {
            cancelled.value = true
            inner.cancel()
        }
    }
}
