import Foundation

/// Writes `text` to standard error (for messages to the operator, not logs).
func printError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}
