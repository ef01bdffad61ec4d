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
            XCTAssertTrue(RelayConfig.helpText.contains(o.flag), o.env)
        }
        XCTAssertTrue(RelayConfig.helpText.contains("RELAY_REQUEST_TIMEOUT"))
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
