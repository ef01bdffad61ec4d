/// Extraction of a bearer token from `Authorization` (RFC 6750 §2.1, RFC 9110 §11.6.2).
public enum BearerToken {
    /// Returns the token of the request's single `Authorization` field.
    ///
    /// - Parameter authorizationValues: every `Authorization` field value of the request,
    ///   in order (one element per header line).
    /// - Returns: the `token68` after `Bearer ` (RFC 9110 §11.2:
    ///   `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`).
    /// - Throws: ``AuthError`` (401): `.missingCredentials` when there is none;
    ///   `.malformedAuthorization` for duplicate fields, a scheme other than `Bearer`
    ///   (compared case-insensitively, RFC 9110 §11.1), anything but exactly one SP between
    ///   scheme and token, or an empty or non-token68 token. Surrounding SP/HTAB of the field
    ///   value is ignored (RFC 9110 §5.5). Reasons never echo the value.
    public static func extract(authorizationValues: [String]) throws -> String {
        guard !authorizationValues.isEmpty else {
            throw AuthError(.missingCredentials, "no Authorization header")
        }
        guard authorizationValues.count == 1 else {
            throw AuthError(.malformedAuthorization, "\(authorizationValues.count) Authorization headers")
        }
        var v = Substring(authorizationValues[0])
        while let f = v.first, f == " " || f == "\t" { v.removeFirst() }
        while let l = v.last, l == " " || l == "\t" { v.removeLast() }
        guard !v.isEmpty else { throw AuthError(.missingCredentials, "empty Authorization header") }
        guard let space = v.firstIndex(of: " ") else {
            throw AuthError(.malformedAuthorization, "Authorization has no credentials after the scheme")
        }
        guard v[..<space].lowercased() == "bearer" else {
            throw AuthError(.malformedAuthorization, "Authorization scheme is not Bearer")
        }
        let token = v[v.index(after: space)...]
        guard !token.isEmpty, isToken68(token.utf8) else {
            throw AuthError(.malformedAuthorization, "bearer token is empty or not token68")
        }
        return String(token)
    }

    /// True when `s` matches token68 (RFC 9110 §11.2).
    static func isToken68<C: Collection>(_ s: C) -> Bool where C.Element == UInt8 {
        var seenPad = false
        var count = 0
        for c in s {
            if c == UInt8(ascii: "=") {
                seenPad = true
            } else {
                if seenPad { return false }
                switch c {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                     UInt8(ascii: "+"), UInt8(ascii: "/"):
                    count += 1
                default: return false
                }
            }
        }
        return count > 0
    }
}
