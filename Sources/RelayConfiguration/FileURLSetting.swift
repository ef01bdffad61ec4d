import Foundation

/// A setting given inline or as `file:///path` to a file holding it (`RELAY_ENCRYPTION_KEYS`,
/// `RELAY_SYSTEM_PROMPTS`, `RELAY_JWT_JWKS_URL`): the one reading of that form. Pure.
public enum FileURLSetting {
    /// The absolute path of a `file:///path` value, `nil` for an inline value.
    /// - Throws: `ConfigError` naming `variable` for `file://` without an absolute path, with
    ///   `example` (a `file:///…` URL) as the form to use.
    public static func path(_ value: String, variable: String, example: String) throws(ConfigError) -> String? {
        guard value.hasPrefix("file://") else { return nil }
        let path = String(value.dropFirst("file://".count))
        guard path.hasPrefix("/") else {
            throw ConfigError("\(variable): file:// needs an absolute path (\(example)), got \"\(value)\"")
        }
        return path
    }

    /// The setting's text: `value` itself, or the contents of the file it names (UTF-8).
    /// - Throws: `ConfigError` naming `variable` as `path(_:variable:example:)` does, or for a
    ///   file that cannot be read.
    public static func text(_ value: String, variable: String, example: String) throws(ConfigError) -> String {
        guard let path = try path(value, variable: variable, example: example) else { return value }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigError("\(variable): cannot read \(path)")
        }
        return text
    }
}
