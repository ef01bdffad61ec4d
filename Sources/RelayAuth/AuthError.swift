import RelayCore

/// Why a request is not authenticated. Every case maps to HTTP 401 `unauthorized`
/// (docs/PROTOCOL.md §2; RFC 9110 §15.5.2, RFC 6750 §3.1).
///
/// `reason` is meant for logs: it explains the failure but never contains the token,
/// the signature, a secret, or claim values chosen by the caller.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of failure; tests and metrics can switch on it.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// No `Authorization` header (RFC 6750 §3.1: no error code in the challenge).
        case missingCredentials = "missing_credentials"
        /// `Authorization` present but not exactly one well-formed `Bearer <token68>`.
        case malformedAuthorization = "malformed_authorization"
        /// Not a compact JWS (RFC 7515 §7.1): length, segments, base64url, JSON shape.
        case malformedToken = "malformed_token"
        /// JOSE header `alg` is not the one configured (including `none`), or `crit` is present.
        case algorithmNotAllowed = "algorithm_not_allowed"
        /// The token's `kid` is not in the JWKS (a refetch is requested, rate-limited), or it
        /// has no `kid` and the set has not exactly one key for its `alg` (docs/TOKENS.md).
        case unknownKey = "unknown_key"
        /// The signature does not verify under the configured key (RFC 7515 §5.2).
        case badSignature = "bad_signature"
        /// `exp` is in the past beyond the leeway (RFC 7519 §4.1.4).
        case expired = "expired"
        /// `nbf` is in the future beyond the leeway (RFC 7519 §4.1.5).
        case notYetValid = "not_yet_valid"
        /// A required claim (`exp`, `sub`, `sid`/`session_id`) is missing or has the wrong type.
        case invalidClaims = "invalid_claims"
        /// `iss` differs from the configured issuer (RFC 7519 §4.1.1).
        case issuerMismatch = "issuer_mismatch"
        /// `aud` does not contain the configured audience (RFC 7519 §4.1.3).
        case audienceMismatch = "audience_mismatch"
        /// The presented admin key is wrong.
        case badAdminKey = "bad_admin_key"
    }

    /// The class of failure.
    public var kind: Kind
    /// Explanation for logs; never contains the token or any secret.
    public var reason: String

    /// Creates an error of `kind`; `reason` must not contain the token or a secret.
    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// The HTTP error to answer with: always 401 `unauthorized`. The message is short and
    /// generic per kind (no detail that helps an attacker beyond "expired" vs "invalid").
    public var apiError: APIError {
        switch kind {
        case .missingCredentials: return .unauthorized("missing bearer token")
        case .malformedAuthorization: return .unauthorized("malformed Authorization header")
        case .expired: return .unauthorized("token expired")
        case .badAdminKey: return .unauthorized("unauthorized")
        default: return .unauthorized("invalid token")
        }
    }

    /// A `WWW-Authenticate` field value for the 401 response (RFC 6750 §3, RFC 9110 §11.6.1):
    /// `Bearer realm="stream-relay"` when no credentials were sent (or for admin routes),
    /// otherwise with `error="invalid_request"` (malformed header) or `error="invalid_token"`.
    public var wwwAuthenticate: String {
        switch kind {
        case .missingCredentials, .badAdminKey: return #"Bearer realm="stream-relay""#
        case .malformedAuthorization: return #"Bearer realm="stream-relay", error="invalid_request""#
        default: return #"Bearer realm="stream-relay", error="invalid_token""#
        }
    }

    public var description: String { "\(kind.rawValue): \(reason)" }
}

/// A configuration mistake found at startup (bad key, short secret, bad leeway, …).
/// Not an HTTP error: the process should refuse to start. `message` never contains a secret.
public struct AuthConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, naming the setting where known.
    public var message: String
    /// Creates the error; `message` must not contain a secret.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
