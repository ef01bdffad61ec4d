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
    func testHelpColumnsAreAligned() {
        let lines = RelayConfig.helpText.split(separator: "\n").filter { $0.hasPrefix("  ") }
        XCTAssertGreaterThan(lines.count, 20)
        let starts = Set(lines.prefix { !$0.contains("RELAY_LOG_") }.map { line -> Int in
            let chars = Array(line)
            var i = 2
            while i < chars.count - 1 && !(chars[i] == " " && chars[i + 1] == " ") { i += 1 }
            while i < chars.count && chars[i] == " " { i += 1 }
            return i
        })
        XCTAssertEqual(starts.count, 1, "descriptions start in one column: \(starts)")
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
