import Foundation
import XCTest
@testable import RelayCore

/// Checks generated README tables against their single source. Run
/// `stream-relay docs` to print the current tables.
final class ErrorTableTests: XCTestCase {
    /// The README's text between `<!-- name:begin -->` and `<!-- name:end -->`.
    static func readmeSection(_ name: String, file: StaticString = #filePath) throws -> String {
        let root = URL(fileURLWithPath: "\(file)").deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let b = text.range(of: "<!-- \(name):begin -->\n"), let e = text.range(of: "<!-- \(name):end -->") else {
            throw XCTSkip("README has no \(name) markers")
        }
        return String(text[b.upperBound..<e.lowerBound])
    }

    func testReadmeErrorTableIsGeneratedFromErrorCode() throws {
        let section = try Self.readmeSection("error-codes")
        XCTAssertEqual(section, ErrorCode.markdownTable,
                       "README error table differs from ErrorCode; paste the output of `stream-relay docs errors`")
    }

    func testEveryCodeHasAStatusADeliveryAndAMeaning() {
        XCTAssertEqual(Set(ErrorCode.allCases.map(\.rawValue)).count, ErrorCode.allCases.count)
        for c in ErrorCode.allCases {
            XCTAssertTrue((400...599).contains(c.status), c.rawValue)
            XCTAssertFalse(c.meaning.isEmpty, c.rawValue)
            XCTAssertEqual(APIError(c, "m").status, c.status)
            XCTAssertEqual(APIError(c, "m").errorCode, c)
        }
        XCTAssertEqual(APIError.streamNotFound.errorCode, .streamNotFound)
        XCTAssertNil(APIError(status: 503, code: "http_503", message: "").errorCode)
    }

    func testStreamStatesRoundTrip() {
        XCTAssertEqual(StreamState.allCases.map(\.rawValue), ["running", "done", "cancelled", "failed"])
        XCTAssertFalse(StreamState.running.isFinished)
        XCTAssertTrue(StreamState.cancelled.isFinished)
    }
}
