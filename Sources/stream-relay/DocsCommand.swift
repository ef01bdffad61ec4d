import RelayConfiguration
import RelayCore
import RelayUpstream

/// `stream-relay docs errors|config|features`: prints a table of docs/ generated from its
/// single source (`ErrorCode`, `RelayConfig.options`), to paste between its markers in
/// docs/PROTOCOL.md, docs/CONFIGURATION.md or README.md (`features`: the settings of
/// takeover, retained answers, encryption at rest and the completion webhook);
/// `ErrorTableTests` / `ConfigTableTests` fail while the docs differ.
/// `stream-relay docs simulated [MODEL]`: prints the simulated upstream's whole answer for
/// `MODEL` (`simulated`, `simulated-ar`), its tokens joined exactly as they are streamed —
/// the independent reference the browser end-to-end test compares a relayed answer with.
enum DocsCommand {
    static let usage = """
    usage: stream-relay docs errors|config|features|simulated [MODEL]
    Prints the error table of docs/PROTOCOL.md (errors), the configuration table of
    docs/CONFIGURATION.md (config) or README.md's table of the settings that keep
    answers (features), generated from the code, to paste between that file's
    markers; or the simulated upstream's whole
    answer for MODEL (simulated, simulated-ar, simulated-tools: its text; default simulated), byte for byte.
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
        case "features":
            print(RelayConfig.markdownTable(of: RelayConfig.answerSurvivalOptions), terminator: "")
            return 0
        case "simulated":
            let model = arguments.dropFirst().first ?? "simulated"
            if arguments.count <= 2, model == SimulatedAgentAnswer.model {
                // The agent answer's text: its deltas joined (its parts are not text).
                print(SimulatedAgentAnswer.events.reduce(into: "") { s, e in if case .delta(let t) = e { s += t } }, terminator: "")
                return 0
            }
            guard arguments.count <= 2, let doc = SimulatedDocuments.document(forModel: model) else {
                printError("docs simulated: unknown model \(model) (simulated, simulated-ar, simulated-tools)\n")
                return 2
            }
            print(SimulatedTokenizer.tokens(doc).joined(), terminator: "")
            return 0
        default:
            printError("\(usage)\n")
            return 2
        }
    }
}
