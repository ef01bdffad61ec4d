import RelayConfiguration
import RelayCore

/// `stream-relay docs errors|config`: prints a README table generated from its single
/// source (`ErrorCode`, `RelayConfig.options`), to paste between the README's markers;
/// `ErrorTableTests` / `ConfigTableTests` fail while the README differs.
enum DocsCommand {
    static func run(arguments: [String]) -> Int32 {
        switch arguments.first {
        case "errors":
            print(ErrorCode.markdownTable, terminator: "")
            return 0
        case "config":
            print(RelayConfig.markdownTable, terminator: "")
            return 0
        default:
            printError("usage: stream-relay docs errors|config\n")
            return 2
        }
    }
}
