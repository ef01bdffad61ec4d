import Foundation
import XCTest
@testable import RelayEventStore

/// `RELAY_ENCRYPTION_KEYS` parsing (docs/DATA_MODEL.md §15).
final class AtRestKeyRingTests: XCTestCase {
    static let keyA = Data(repeating: 0xA1, count: 32).base64EncodedString()
    static let keyB = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    func testParsesPairsWithTheFirstKidCurrent() throws {
        let ring = try AtRestKeyRing.parse("k2:\(Self.keyB), k1:\(Self.keyA)")
        XCTAssertEqual(ring.currentKid, "k2")
        XCTAssertEqual(ring.kids, ["k2", "k1"])
        XCTAssertEqual(ring.keys["k1"], [UInt8](repeating: 0xA1, count: 32))
        XCTAssertEqual(ring.keys["k2"], (0..<32).map { UInt8($0) })
    }

    func testAcceptsOnePairPerLineAsAKeyFileHoldsThem() throws {
        let ring = try AtRestKeyRing.parse("2026-12:\(Self.keyB)\n2026-11:\(Self.keyA)\n")
        XCTAssertEqual(ring.kids, ["2026-12", "2026-11"])
    }

    func testRefusesEmptyList() {
        assertRefused("", containing: "empty")
        assertRefused(" , \n", containing: "empty")
    }

    func testRefusesBadBase64() {
        assertRefused("k1:not*base64!", containing: "not valid base64")
    }

    func testRefusesAKeyThatIsNot32Bytes() {
        assertRefused("k1:\(Data(repeating: 1, count: 16).base64EncodedString())", containing: "16 bytes")
        assertRefused("k1:\(Data(repeating: 1, count: 33).base64EncodedString())", containing: "33 bytes")
    }

    func testRefusesADuplicateKid() {
        assertRefused("k1:\(Self.keyA),k1:\(Self.keyB)", containing: "given twice")
    }

    func testRefusesAnEntryWithoutKidOrWithABadKid() {
        assertRefused(Self.keyA, containing: "no ':'")
        assertRefused(":\(Self.keyA)", containing: "kid must be")
        assertRefused("k 1:\(Self.keyA)", containing: "kid must be")
        assertRefused("\(String(repeating: "k", count: 33)):\(Self.keyA)", containing: "kid must be")
    }

    func testErrorsNeverCarryKeyMaterial() {
        let b64 = Data(repeating: 7, count: 31).base64EncodedString()
        do {
            _ = try AtRestKeyRing.parse("k1:\(b64)")
            XCTFail("accepted")
        } catch {
            XCTAssertFalse(error.message.contains(b64))
        }
    }

    private func assertRefused(_ text: String, containing part: String, line: UInt = #line) {
        do {
            _ = try AtRestKeyRing.parse(text)
            XCTFail("accepted \(text)", line: line)
        } catch {
            XCTAssertTrue(error.message.contains(part), "\(error.message)", line: line)
            XCTAssertTrue(error.message.hasPrefix("RELAY_ENCRYPTION_KEYS"), line: line)
        }
    }
}
