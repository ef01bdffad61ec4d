/// A configuration value that could not be used; the message names the variable.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ d: String) { description = d }
}
