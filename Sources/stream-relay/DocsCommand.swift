import RelayConfiguration
import RelayCore

/// `stream-relay docs errors|config`: prints a README table generated from its single
/// source (`ErrorCode`, `RelayConfig.options`), to paste between the README's markers;
/// `ErrorTableTests` / `ConfigTableTests` fail while the README differs.
enum DocsCommand {
    static let usage = """
    usage: stream-relay docs errors|config
    Prints the README's error table (errors) or configuration table (config), generated
    from the code, to paste between the README's markers.
    """

    static func run(arguments: [String]) -> Int32 {
        switch arguments.first {
        case "--help", "-h":
            print(usage)
            return 0
        case "errors":
            print(ErrorCode.markdownTable, terminator: "")
            return 0
        case "config":
            print(RelayConfig.markdownTable, terminator: "")
            return 0
        default:
            printError("\(usage)\n")
            return 2
        }
    }
}
