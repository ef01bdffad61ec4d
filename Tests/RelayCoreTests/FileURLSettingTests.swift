import XCTest
import RelayConfiguration

/// A setting given inline or as `file:///path` (`RELAY_ENCRYPTION_KEYS`, `RELAY_SYSTEM_PROMPTS`,
/// `RELAY_JWT_JWKS_URL`): an absolute path is read, anything else inline, `file://` with a
/// relative path refused naming the variable.
final class FileURLSettingTests: XCTestCase {
    func testFileURLNeedsAnAbsolutePath() throws {
        let keys = "RELAY_ENCRYPTION_KEYS", prompts = "RELAY_SYSTEM_PROMPTS"
        XCTAssertEqual(try FileURLSetting.path("file:///etc/relay/keys", variable: keys, example: "file:///k"), "/etc/relay/keys")
        XCTAssertNil(try FileURLSetting.path("k1:a2V5", variable: keys, example: "file:///k"))
        XCTAssertThrowsError(try FileURLSetting.path("file://etc/keys", variable: keys, example: "file:///etc/relay/at-rest-keys")) { e in
            XCTAssertEqual("\(e)", #"RELAY_ENCRYPTION_KEYS: file:// needs an absolute path (file:///etc/relay/at-rest-keys), got "file://etc/keys""#)
        }
        XCTAssertThrowsError(try FileURLSetting.path("file://relative/path", variable: prompts, example: "file:///p"))
        XCTAssertEqual(try FileURLSetting.path("file:///etc/relay/prompts.json", variable: prompts, example: "file:///p"), "/etc/relay/prompts.json")
        XCTAssertNil(try FileURLSetting.path(#"{"default":"D"}"#, variable: prompts, example: "file:///p"))
    }

    func testTheTextIsTheValueOrTheFilesContents() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("setting-\(UUID().uuidString)")
        try Data("from the file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        XCTAssertEqual(try FileURLSetting.text("inline", variable: "V", example: "file:///v"), "inline")
        XCTAssertEqual(try FileURLSetting.text("file://\(file.path)", variable: "V", example: "file:///v"), "from the file")
        XCTAssertThrowsError(try FileURLSetting.text("file:///nonexistent/x", variable: "V", example: "file:///v")) { e in
            XCTAssertEqual("\(e)", "V: cannot read /nonexistent/x")
        }
    }
}
