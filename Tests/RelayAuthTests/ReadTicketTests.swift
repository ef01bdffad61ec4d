import XCTest
@testable import RelayAuth

/// `ReadTicket` (docs/PROTOCOL.md §2.5): what a ticket admits, and every way one is refused.
final class ReadTicketTests: XCTestCase {
    let key = ReadTicketKey(secret: Array(repeating: 7, count: 32))
    let other = ReadTicketKey(secret: Array(repeating: 9, count: 32))
    let ticket = ReadTicket(ownerHash: OwnerHash.of("alice"), requestID: "req_0123456789abcdef", sid: "sess.1 ✓", expiresAt: 2_000)

    func testASignedTicketVerifiesWithItsKeyBeforeItsExpiry() throws {
        let text = ticket.signed(with: key)
        XCTAssertEqual(try ReadTicket.verify(text, keys: [other, key], now: 1_999), ticket)
        XCTAssertEqual(ReadTicket.keyID(of: text), key.id)
        XCTAssertFalse(text.contains("alice"), "the sub never appears in a ticket")
        XCTAssertTrue(text.utf8.allSatisfy { c in
            (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == 0x2D || c == 0x5F || c == 0x2E
        }, "URL-safe without escaping (RFC 3986 §2.3): \(text)")
    }

    func testExpiredAtItsExpiry() {
        XCTAssertThrowsError(try ReadTicket.verify(ticket.signed(with: key), keys: [key], now: 2_000)) {
            XCTAssertEqual($0 as? ReadTicket.Refusal, .expired)
        }
    }

    func testAKeyItDoesNotNameIsUnknownAndAnotherKeysSignatureFails() {
        let text = ticket.signed(with: key)
        XCTAssertThrowsError(try ReadTicket.verify(text, keys: [other], now: 0)) {
            XCTAssertEqual($0 as? ReadTicket.Refusal, .unknownKey(key.id))
        }
        // A ticket signed with `other` but claiming `key`'s id.
        XCTAssertNotEqual(other.id, key.id)
        var parts = ticket.signed(with: other).split(separator: ".").map(String.init)
        parts[1] = key.id
        let unsigned = parts.dropLast().joined(separator: ".")
        let forged = unsigned + "." + Base64URL.encode(OpenSSLShim.hmacSHA256(key: other.secret, data: Array(unsigned.utf8)))
        XCTAssertThrowsError(try ReadTicket.verify(forged, keys: [key], now: 0)) {
            XCTAssertEqual($0 as? ReadTicket.Refusal, .badSignature)
        }
    }

    /// Changing any part — owner, stream, session, expiry, signature — breaks the signature.
    func testEveryAlteredPartIsRefused() {
        let text = ticket.signed(with: key)
        let parts = text.split(separator: ".").map(String.init)
        let replacements: [(Int, String)] = [
            (2, OwnerHash.of("mallory")), (3, "req_0123456789abcdeX"), (4, Base64URL.encode(Array("sess.2".utf8))),
            (5, "999999"), (6, Base64URL.encode(Array(repeating: UInt8(0), count: 32))),
        ]
        for (i, v) in replacements {
            var p = parts
            p[i] = v
            XCTAssertThrowsError(try ReadTicket.verify(p.joined(separator: "."), keys: [key], now: 0), "part \(i)") {
                XCTAssertEqual($0 as? ReadTicket.Refusal, .badSignature, "part \(i)")
            }
        }
    }

    func testMalformedTextsAreRefused() {
        let text = ticket.signed(with: key)
        let parts = text.split(separator: ".").map(String.init)
        var bad = ["", "rt1", text + ".x", "rt2" + text.dropFirst(3), String(text.dropLast()) + "=",
                   String(repeating: "a", count: ReadTicket.maxLength + 1)]
        for (i, v) in [(1, "XYZ12345"), (2, "short"), (3, "bad id!"), (3, "short"), (4, ""), (4, "@@"),
                       (5, "-1"), (5, "1e9"), (5, ""), (5, "02000"), (5, String(repeating: "9", count: 19)), (6, "AAAA")] {
            var p = parts
            p[i] = v
            bad.append(p.joined(separator: "."))
        }
        for b in bad {
            XCTAssertThrowsError(try ReadTicket.verify(b, keys: [key], now: 0), b) {
                XCTAssertEqual($0 as? ReadTicket.Refusal, .malformed, b)
            }
        }
    }

    func testKeysRoundTripThroughTheirStoredFormAndRotateKeepingThePreviousOne() {
        XCTAssertEqual(ReadTicketKey(hex: key.hex), key)
        XCTAssertEqual(key.hex.count, 64)
        XCTAssertNil(ReadTicketKey(hex: "zz" + key.hex.dropFirst(2)))
        XCTAssertNil(ReadTicketKey(hex: String(key.hex.dropLast())))
        XCTAssertNotEqual(ReadTicketKey.random(), ReadTicketKey.random())
        let keys = ReadTicketKeys()
        XCTAssertNil(keys.current)
        keys.install(key)
        keys.install(key)
        XCTAssertEqual(keys.all, [key], "the same key again changes nothing")
        keys.install(other)
        XCTAssertEqual(keys.current, other)
        XCTAssertEqual(keys.all, [other, key], "the previous key still verifies after a rotation")
    }
}
