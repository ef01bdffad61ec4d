import Foundation
import XCTest
@testable import RelayCore

/// Checks generated documentation tables against their single source. Run
/// `stream-relay docs` to print the current tables.
final class ErrorTableTests: XCTestCase {
    /// A generated block's markers are missing from its file: a failure, never a skip, so
    /// the check cannot pass by the block being deleted or renamed.
    struct MissingGeneratedBlock: Error, CustomStringConvertible {
        let name: String
        let file: String
        var description: String { "\(file) has no <!-- \(name):begin --> … <!-- \(name):end --> block" }
    }

    /// The text of `file` (a path relative to the package root, e.g. `docs/PROTOCOL.md`)
    /// between `<!-- name:begin -->` and `<!-- name:end -->`.
    /// - Throws: `MissingGeneratedBlock` when either marker is missing (or they are out of
    ///   order); the file's read error when it cannot be read.
    static func generatedBlock(named name: String, in file: String, source: StaticString = #filePath) throws -> String {
        let root = URL(fileURLWithPath: "\(source)").deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
        guard let b = text.range(of: "<!-- \(name):begin -->\n"), let e = text.range(of: "<!-- \(name):end -->"),
              b.upperBound <= e.lowerBound else {
            throw MissingGeneratedBlock(name: name, file: file)
        }
        return String(text[b.upperBound..<e.lowerBound])
    }

    func testProtocolErrorTableIsGeneratedFromErrorCode() throws {
        let section = try Self.generatedBlock(named: "error-codes", in: "docs/PROTOCOL.md")
        XCTAssertEqual(section, ErrorCode.markdownTable,
                       "docs/PROTOCOL.md error table differs from ErrorCode; paste the output of `stream-relay docs errors`")
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
