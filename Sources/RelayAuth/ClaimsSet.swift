import Foundation

/// The registered and relay claims of a JWT payload (RFC 7519 §4), decoded strictly
/// with Foundation: the payload must be a JSON object; each claim, when present, must
/// have its registered type (a string `exp` is an error, not "absent").
struct ClaimsSet: Decodable {
    var sub: String?
    var sid: String?
    var sessionID: String?
    var tier: String?
    var exp: Int64?
    var nbf: Int64?
    var iat: Int64?
    var iss: String?
    /// `aud`: a string or an array of strings (RFC 7519 §4.1.3), normalised to an array.
    var aud: [String]?

    enum CodingKeys: String, CodingKey {
        case sub, sid, tier, exp, nbf, iat, iss, aud
        case sessionID = "session_id"
    }

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sub = try c.decodeIfPresent(String.self, forKey: .sub)
        sid = try c.decodeIfPresent(String.self, forKey: .sid)
        sessionID = try c.decodeIfPresent(String.self, forKey: .sessionID)
        tier = try c.decodeIfPresent(String.self, forKey: .tier)
        exp = try Self.numericDate(c, .exp)
        nbf = try Self.numericDate(c, .nbf)
        iat = try Self.numericDate(c, .iat)
        iss = try c.decodeIfPresent(String.self, forKey: .iss)
        if try !c.contains(.aud) || c.decodeNil(forKey: .aud) {
            aud = nil
        } else if let one = try? c.decode(String.self, forKey: .aud) {
            aud = [one]
        } else {
            aud = try c.decode([String].self, forKey: .aud)
        }
    }

    /// NumericDate (RFC 7519 §2): a JSON number of seconds; fractions are floored.
    /// Strings, booleans, and values beyond ±2^53 s are errors.
    private static func numericDate(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Int64? {
        guard c.contains(key), try !c.decodeNil(forKey: key) else { return nil }
        if let i = try? c.decode(Int64.self, forKey: key) {
            guard i.magnitude <= 1 << 53 else { throw AuthError(.invalidClaims, "\(key.rawValue) out of range") }
            return i
        }
        let d: Double
        do { d = try c.decode(Double.self, forKey: key) } catch {
            throw AuthError(.invalidClaims, "\(key.rawValue) is not a NumericDate")
        }
        guard d.isFinite, abs(d) <= Double(1 << 53) else {
            throw AuthError(.invalidClaims, "\(key.rawValue) out of range")
        }
        return Int64(d.rounded(.down))
    }

    /// Decodes `payload`. Throws `AuthError` (`.malformedToken` for non-JSON or non-object,
    /// `.invalidClaims` for a claim of the wrong type).
    static func decode(_ payload: [UInt8]) throws -> ClaimsSet {
        do {
            return try JSONDecoder().decode(ClaimsSet.self, from: Data(payload))
        } catch let e as AuthError {
            throw e
        } catch DecodingError.typeMismatch(_, let ctx) where !ctx.codingPath.isEmpty {
            throw AuthError(.invalidClaims, "claim \(ctx.codingPath[0].stringValue) has the wrong type")
        } catch {
            throw AuthError(.malformedToken, "payload is not a JSON object")
        }
    }
}
