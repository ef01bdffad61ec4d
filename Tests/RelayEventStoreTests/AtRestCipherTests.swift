import Foundation
import XCTest
@testable import RelayEventStore

/// AES-256-GCM sealing at rest through EVP (docs/DATA_MODEL.md §15).
final class AtRestCipherTests: XCTestCase {
    static let keyA = Data(repeating: 0xA1, count: 32).base64EncodedString()
    static let keyB = Data((0..<32).map { UInt8($0) }).base64EncodedString()
    let events = "relay:{abc:r1}:events"

    private func cipher(_ spec: String) throws -> AtRestCipher { try AtRestCipher(ring: try AtRestKeyRing.parse(spec)) }

    func testSealThenOpenRoundTripsEnglishArabicAndEmpty() throws {
        let c = try cipher("k1:\(Self.keyA)")
        for text in [#"{"type":"delta","content":"The Receiving Party shall hold"}"#,
                     #"{"type":"delta","content":"يلتزم الطرف المتلقي بالحفاظ على سرية"}"#, "", "x"] {
            let sealed = c.seal(text, aad: events)
            XCTAssertEqual(sealed.utf8.first, UInt8(ascii: "~"))
            XCTAssertEqual(sealed.utf8.count, SealedFormat.sealedLength(plaintextBytes: text.utf8.count, kidBytes: 2))
            XCTAssertTrue(sealed.utf8.allSatisfy { $0 < 0x80 }, "ASCII only")
            if text.utf8.count > 8 { XCTAssertFalse(sealed.contains(text)) }
            XCTAssertEqual(String(decoding: try c.open(sealed, aad: events), as: UTF8.self), text)
        }
        XCTAssertEqual(c.seals, 4)
        XCTAssertEqual(c.opens, 4)
    }

    func testEverySealHasAFreshNonce() throws {
        let c = try cipher("k1:\(Self.keyA)")
        let a = c.seal("same", aad: events), b = c.seal("same", aad: events)
        XCTAssertNotEqual(a, b)
        let na = try SealedFormat.parse(try a.utf8.withContiguousStorageIfAvailable { try SealedFormat.binary(ofText: $0) }!)
        XCTAssertEqual(na.nonce.count, 12)
        XCTAssertEqual(na.tag.count, 16)
        XCTAssertEqual(na.kid, "k1")
    }

    func testOtherAssociatedDataDoesNotOpen() throws {
        let c = try cipher("k1:\(Self.keyA)")
        let sealed = c.seal("secret", aad: events)
        XCTAssertThrowsError(try c.open(sealed, aad: "relay:{abc:r2}:events")) { e in
            XCTAssertEqual((e as? AtRestOpenError)?.kind, .authenticationFailed(kid: "k1"))
        }
        XCTAssertEqual(c.openFailures, 1)
    }

    func testTamperedTagOrCiphertextDoesNotOpen() throws {
        let c = try cipher("k1:\(Self.keyA)")
        let sealed = c.seal("The Disclosing Party", aad: events)
        var bin = try Array(sealed.utf8).withUnsafeBufferPointer { try SealedFormat.binary(ofText: $0) }
        for i in [bin.count - 1, bin.count - 20] {
            var t = bin
            t[i] ^= 0x01
            let text = t.withUnsafeBufferPointer { SealedFormat.text(ofBinary: $0) }
            XCTAssertThrowsError(try c.open(text, aad: events)) { e in
                XCTAssertEqual((e as? AtRestOpenError)?.kind, .authenticationFailed(kid: "k1"))
            }
        }
        bin.removeLast(17)
        let cut = bin.withUnsafeBufferPointer { SealedFormat.text(ofBinary: $0) }
        XCTAssertThrowsError(try c.open(cut, aad: events))
        XCTAssertThrowsError(try c.open("~abc", aad: events)) { e in
            XCTAssertEqual((e as? AtRestOpenError)?.kind, .malformed(.badBase64))
        }
    }

    func testRotationOldKidStillOpensAndNewSealsUseTheCurrentKid() throws {
        let old = try cipher("k1:\(Self.keyA)")
        let sealedOld = old.seal("draft", aad: events)
        let rotated = try cipher("k2:\(Self.keyB),k1:\(Self.keyA)")
        XCTAssertEqual(String(decoding: try rotated.open(sealedOld, aad: events), as: UTF8.self), "draft")
        let sealedNew = rotated.seal("draft", aad: events)
        let p = try SealedFormat.parse(try Array(sealedNew.utf8).withUnsafeBufferPointer { try SealedFormat.binary(ofText: $0) })
        XCTAssertEqual(p.kid, "k2")
        // The old relay does not know k2: a clear error, not garbage.
        XCTAssertThrowsError(try old.open(sealedNew, aad: events)) { e in
            XCTAssertEqual((e as? AtRestOpenError)?.kind, .unknownKid("k2"))
            XCTAssertTrue("\(e)".contains("k2"))
        }
    }

    func testSameKidWithAnotherKeyDoesNotOpen() throws {
        let a = try cipher("k1:\(Self.keyA)"), b = try cipher("k1:\(Self.keyB)")
        XCTAssertThrowsError(try b.open(a.seal("x", aad: events), aad: events)) { e in
            XCTAssertEqual((e as? AtRestOpenError)?.kind, .authenticationFailed(kid: "k1"))
        }
    }

    /// docs/DATA_MODEL.md §15: plaintext is read only in a stream marked `plain` (created
    /// without keys); in a sealed stream it is refused like a value under a wrong key, so a
    /// Redis writer cannot add answer text; a sealed value without keys is refused.
    func testPlaintextIsReadOnlyInAStreamMarkedPlainAndSealedWithoutKeysIsRefused() throws {
        let c = try cipher("k1:\(Self.keyA)")
        XCTAssertEqual(try AtRestValue.open(#"{"type":"done"}"#, key: events, mode: .plain, cipher: c), #"{"type":"done"}"#)
        XCTAssertEqual(try AtRestValue.open(#"{"type":"done"}"#, key: events, mode: .plain, cipher: nil), #"{"type":"done"}"#)
        for cipher in [c, nil] {
            XCTAssertThrowsError(try AtRestValue.open(#"{"type":"delta","content":"FORGED"}"#, key: events, mode: .sealed, cipher: cipher)) { e in
                XCTAssertEqual((e as? AtRestOpenError)?.kind, .unexpectedPlaintext)
            }
        }
        let sealed = c.seal("x", aad: events)
        XCTAssertEqual(try AtRestValue.open(sealed, key: events, mode: .sealed, cipher: c), "x")
        XCTAssertThrowsError(try AtRestValue.open(sealed, key: events, mode: .sealed, cipher: nil)) { e in
            XCTAssertEqual((e as? AtRestOpenError)?.kind, .noKeys)
        }
        XCTAssertEqual(try AtRestValue.open(sealed, key: events, mode: .plain, cipher: c), sealed,
                       "in a plain stream a value is text whatever its first byte (an answer may start with ~)")
    }

    /// A text key of a sealed stream that starts in plaintext (a keyless writer began it,
    /// or a Redis writer) is refused whole, never served as plaintext followed by ciphertext.
    func testASealedStreamsTextThatStartsInPlaintextIsRefused() throws {
        let c = try cipher("k1:\(Self.keyA)")
        let k = StreamKeys("abc:r1")
        let mixed = Array("The Receiving ".utf8) + Array(c.seal("Party", aad: EventLog.textAAD(k, start: 14)).utf8)
        XCTAssertThrowsError(try EventLog.openText(mixed, key: k, mode: .sealed, cipher: c)) { e in
            XCTAssertEqual((e as? AtRestOpenError)?.kind, .unexpectedPlaintext)
        }
        XCTAssertEqual(try EventLog.openText(Array("~tilde first".utf8), key: k, mode: .plain, cipher: c), Array("~tilde first".utf8))
    }

    func testTheModeIsTheMetasAndFollowsTheKeysWhenNoneIsRecorded() {
        XCTAssertEqual(AtRestMode.of(metaField: "plain", haveKeys: true), .plain)
        XCTAssertEqual(AtRestMode.of(metaField: "sealed", haveKeys: false), .sealed)
        XCTAssertEqual(AtRestMode.of(metaField: nil, haveKeys: true), .sealed)
        XCTAssertEqual(AtRestMode.of(metaField: "", haveKeys: false), .plain)
        XCTAssertEqual(AtRestMode.sealed.read(looksSealed: false), .refuse)
        XCTAssertEqual(AtRestMode.plain.read(looksSealed: true), .asIs)
    }

    func testTextRecordsOpenInOrderAndAMovedRecordDoesNot() throws {
        let c = try cipher("k1:\(Self.keyA)")
        let k = StreamKeys("abc:r1")
        let parts = ["The Receiving ", "Party shall ", "يلتزم الطرف"]
        var stored: [UInt8] = [], start = 0
        var records: [[UInt8]] = []
        for p in parts {
            let r = Array(c.seal(p, aad: EventLog.textAAD(k, start: start)).utf8)
            records.append(r)
            stored += r
            start += p.utf8.count
        }
        XCTAssertEqual(String(decoding: try EventLog.openText(stored, key: k, mode: .sealed, cipher: c), as: UTF8.self), parts.joined())
        // Swapped records: each is bound to its plaintext offset.
        let swapped = records[1] + records[0] + records[2]
        XCTAssertThrowsError(try EventLog.openText(swapped, key: k, mode: .sealed, cipher: c))
        // Another stream's text key.
        XCTAssertThrowsError(try EventLog.openText(stored, key: StreamKeys("abc:r2"), mode: .sealed, cipher: c))
    }

    func testNonCanonicalBase64IsRefused() {
        // "QQ==" is 0x41; "QR==" decodes to the same byte with unused bits set (found by
        // the sealed_format fuzz target): refused, so one value has one text.
        for t in ["~QR==", "~QUF=", "~QQ=A", "~Q===", "~QQ", "~"] {
            XCTAssertThrowsError(try Array(t.utf8).withUnsafeBufferPointer { try SealedFormat.binary(ofText: $0) }, t)
        }
        XCTAssertEqual(try Array("~QQ==".utf8).withUnsafeBufferPointer { try SealedFormat.binary(ofText: $0) }, [0x41])
    }

    func testBase64MatchesFoundation() throws {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let ours = bytes.withUnsafeBufferPointer { SealedFormat.text(ofBinary: $0) }
            XCTAssertEqual(ours, "~" + Data(bytes).base64EncodedString())
            if n > 0 {
                XCTAssertEqual(try Array(ours.utf8).withUnsafeBufferPointer { try SealedFormat.binary(ofText: $0) }, bytes)
            }
        }
    }

    /// What a stream read back must look like to reach a client: one JSON object on one
    /// line; a sealed value served as plain (a rewritten mode) or smuggled SSE fields are not.
    func testOnlyOneLineJSONObjectsAreEventsReadBack() {
        XCTAssertTrue(EventLog.isEventJSON(#"{"type":"delta","content":"a\nb"}"#), "an escaped newline is fine")
        XCTAssertFalse(EventLog.isEventJSON("~AQJrMQ=="))
        XCTAssertFalse(EventLog.isEventJSON("{\"type\":\"delta\"}\nid: 99999\nevent: evil"))
        XCTAssertFalse(EventLog.isEventJSON("{\"a\":1}\r"))
        XCTAssertFalse(EventLog.isEventJSON(""))
    }
}
