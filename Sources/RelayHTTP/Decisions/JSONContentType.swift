import RelayCore
/// Whether a request's `Content-Type` names a JSON body the relay can read (RFC 9110
/// §8.3.1: `type "/" subtype *( OWS ";" OWS parameter )`, type, subtype and parameter
/// names case-insensitive). Accepted: media type `application/json` exactly, with no
/// `charset` or with `charset=utf-8` (quoted or not; RFC 8259 §8.1: JSON exchanged between
/// systems is UTF-8). Refused: a missing header, another subtype that merely starts with
/// `json` (`application/jsonx`, `application/json-seq`) and any other charset
/// (`utf-16`, whose bytes the parser would misread). Pure; no Foundation.
public enum JSONContentType {
    /// `true` when `value` (the raw header value, `nil` when absent) is acceptable.
    public static func accepts(_ value: String?) -> Bool {
        guard let value else { return false }
        var parts = value.split(separator: ";", omittingEmptySubsequences: false).map { trim($0).lowercased() }
        guard !parts.isEmpty, parts.removeFirst() == "application/json" else { return false }
        for p in parts where !p.isEmpty {
            guard let eq = p.firstIndex(of: "=") else { return false }
            let name = trim(p[..<eq])
            var v = trim(p[p.index(after: eq)...])
            if v.count >= 2, v.hasPrefix("\""), v.hasSuffix("\"") { v = String(v.dropFirst().dropLast()) }
            if name == "charset", v != "utf-8", v != "utf8" { return false }
        }
        return true
    }

    private static func trim<S: StringProtocol>(_ s: S) -> String {
        String(s.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
