import Foundation
import XCTest
@testable import RelayAuth

final class Base64URLTests: XCTestCase {
    func testRoundTripAgainstFoundation() {
        var rng = SystemRandomNumberGenerator()
        for n in 0..<70 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(Base64URL.encode(bytes), expected)
            if n > 0 { XCTAssertEqual(Base64URL.decode(Array(expected.utf8)), bytes) }
        }
    }

    func testRejectsNonCanonicalAndForeignInput() {
        XCTAssertNil(Base64URL.decode(Array("".utf8)))
        XCTAssertNil(Base64URL.decode(Array("A".utf8)))
        XCTAssertNil(Base64URL.decode(Array("AB".utf8)), "unused bits set")
        XCTAssertEqual(Base64URL.decode(Array("AA".utf8)), [0])
        XCTAssertNil(Base64URL.decode(Array("AA==".utf8)))
        XCTAssertNil(Base64URL.decode(Array("a+/b".utf8)))
        XCTAssertNil(Base64URL.decode(Array("ab cd".utf8)))
    }
}
