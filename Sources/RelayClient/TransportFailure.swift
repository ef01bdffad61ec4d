import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why an HTTP exchange with a relay failed before any response arrived, as far as the
/// transport can tell: the relay refused the connection, its host name did not resolve,
/// the connection timed out, or the network is unreachable. Apps and the CLI show it
/// instead of a generic "connection lost", with the URL they tried.
///
/// `CurlTransport` (RelayClientCurl) throws it from `fetch` and puts its `description` in a
/// stream's `ConnectionEvent.end(error:)`; `init(_:)` classifies `URLSession`'s `URLError`s.
public struct TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The cause, as far as the transport reports it.
    public enum Kind: String, Sendable, Equatable {
        /// The host answered the TCP connection with a reset (`ECONNREFUSED`): nothing
        /// listens on that port.
        case refused
        /// The host name did not resolve (DNS).
        case hostNotFound
        /// Connecting, or waiting for bytes, took longer than the request's limit.
        case timedOut
        /// No route to the host or network (`EHOSTUNREACH`, `ENETUNREACH`, offline).
        case unreachable
        /// Anything else (TLS, a reset mid-exchange, …): see `detail`.
        case other
    }

    /// The cause.
    public var kind: Kind
    /// The transport's own message (libcurl's error buffer, `URLError`'s description).
    public var detail: String

    /// A failure of `kind`, with the transport's own message as `detail`.
    public init(kind: Kind, detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// Classifies any error a transport threw: a `TransportFailure` as it is, a `URLError`
    /// by its code, anything else as `.other` with its description.
    public init(_ error: any Error) {
        if let f = error as? TransportFailure {
            self = f
            return
        }
        if let u = error as? URLError {
            let kind: Kind
            switch u.code {
            case .cannotConnectToHost: kind = .refused
            case .cannotFindHost, .dnsLookupFailed: kind = .hostNotFound
            case .timedOut: kind = .timedOut
            case .notConnectedToInternet, .internationalRoamingOff, .dataNotAllowed: kind = .unreachable
            default: kind = .other
            }
            self.init(kind: kind, detail: u.localizedDescription)
            return
        }
        self.init(kind: .other, detail: String(describing: error))
    }

    /// A short reason for people: "connection refused", "host not found (DNS)", "timed
    /// out", "network unreachable", or `detail` for `.other`.
    public var reason: String {
        switch kind {
        case .refused: return "connection refused"
        case .hostNotFound: return "host not found (DNS)"
        case .timedOut: return "timed out"
        case .unreachable: return "network unreachable"
        case .other: return detail
        }
    }

    /// `reason`, then `detail` in parentheses when it adds something.
    public var description: String {
        kind == .other || detail.isEmpty ? reason : "\(reason) (\(detail))"
    }
}
