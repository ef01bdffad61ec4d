import XCTest
import RelayConfiguration

/// `RelayConfig.options` is the one source of the configuration: the README table is
/// rendered from it, and every documented literal default is the real one.
final class ConfigTableTests: XCTestCase {
    func testReadmeConfigurationTableIsGeneratedFromTheOptions() throws {
        let section = try ErrorTableTests.generatedBlock(named: "configuration", in: "docs/CONFIGURATION.md")
        XCTAssertEqual(section, RelayConfig.markdownTable,
                       "README configuration table differs from RelayConfig.options; paste `stream-relay docs config`")
    }

    func testReadmeTableOfAnswerKeepingSettingsIsGeneratedFromTheOptions() throws {
        let section = try ErrorTableTests.generatedBlock(named: "answer-settings", in: "README.md")
        XCTAssertEqual(section, RelayConfig.markdownTable(of: RelayConfig.answerSurvivalOptions),
                       "README's table of answer-keeping settings differs from RelayConfig.options; paste `stream-relay docs features`")
        XCTAssertEqual(RelayConfig.answerSurvivalOptions.count, 11, "takeover 2, retention 2, encryption 1, webhook 6")
    }

    func testEveryOptionHasAUnitADocAndAUniqueFlag() {
        XCTAssertEqual(Set(RelayConfig.options.map(\.env)).count, RelayConfig.options.count)
        XCTAssertEqual(Set(RelayConfig.options.map(\.flag)).count, RelayConfig.options.count)
        for o in RelayConfig.options {
            XCTAssertFalse(o.unit.isEmpty, o.env)
            XCTAssertFalse(o.doc.isEmpty, o.env)
            XCTAssertTrue(o.flag.hasPrefix("--"), o.env)
            XCTAssertEqual(RelayConfig.helpText.contains(o.flag), !o.testOnly, "\(o.env): operator options in --help, test-only ones not")
            XCTAssertEqual(RelayConfig.testOptionsHelpText.contains(o.flag), o.testOnly, o.env)
            XCTAssertEqual(RelayConfig.markdownTable.contains(o.env), !o.testOnly, o.env)
        }
        XCTAssertTrue(RelayConfig.helpText.contains("RELAY_REQUEST_TIMEOUT"))
        XCTAssertTrue(RelayConfig.helpText.contains("RELAY_LOG_LEVEL"))
        XCTAssertTrue(RelayConfig.helpText.contains("RELAY_LOG_FORMAT"))
        XCTAssertFalse(RelayConfig.helpText.contains("--debug-replay-delay"))
    }

    /// Every help line's description starts in the same column, whatever the option lengths.
    func testHelpColumnsAreAlignedAndFitEightyColumns() {
        for text in [RelayConfig.helpText, RelayConfig.testOptionsHelpText] {
            let lines = text.split(separator: "\n").filter { $0.hasPrefix("  ") }
            XCTAssertGreaterThanOrEqual(lines.count, 2)
            for line in lines {
                let isName = line.hasPrefix("  -") || line.hasPrefix("  RELAY_")
                XCTAssertTrue(isName || line.hasPrefix(String(repeating: " ", count: RelayConfig.helpIndent)),
                              "a name two spaces in, or a description at column \(RelayConfig.helpIndent): \(line)")
                if !isName {
                    XCTAssertNotEqual(line.dropFirst(RelayConfig.helpIndent).first, " ", "descriptions start in one column: \(line)")
                }
                XCTAssertTrue(line.count <= RelayConfig.helpWidth || !line.dropFirst(RelayConfig.helpIndent).contains(" "),
                              "fits \(RelayConfig.helpWidth) columns: \(line)")
            }
        }
        XCTAssertEqual(RelayConfig.wrap("aa bb cc", indent: 2, width: 7), ["  aa bb", "  cc"])
        XCTAssertEqual(RelayConfig.wrap("a-very-long-word x", indent: 2, width: 7), ["  a-very-long-word", "  x"])
    }

    /// Applying each documented default to a fresh configuration changes nothing, so
    /// the table, `--help` and the code cannot disagree.
    func testDocumentedDefaultsAreTheRealDefaults() throws {
        let descriptive: Set<String> = ["cores", "private redis-server", "hostname-pid", "generated dev secret", "off", "—"]
        var checked = 0
        for o in RelayConfig.options where !descriptive.contains(o.defaultValue) {
            var c = RelayConfig()
            try o.apply(o.defaultValue, to: &c)
            XCTAssertEqual(c, RelayConfig(), "\(o.env): documented default \(o.defaultValue) is not the default")
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20)
    }
}
