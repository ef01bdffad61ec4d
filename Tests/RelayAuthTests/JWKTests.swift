import Foundation
import XCTest
@testable import RelayAuth

/// JWK parsing and validation (RFC 7517/7518), key building through OpenSSL, set selection.
final class JWKTests: XCTestCase {
    static let rsa = try! JWKKeyBuilder.generate(.rsa, kid: "r1")
    static let ec = try! JWKKeyBuilder.generate(.ec, kid: "e1")

    private func parse(_ json: [String: Any]) throws -> JSONWebKey { try JSONWebKey(json: json) }

    /// The public JWK of a key the openssl CLI made, read back from its PEM with the CLI.
    private func cliRSAJWK(_ pair: TestKeys.Pair, kid: String) throws -> [String: Any] {
        let pub = TestKeys.dir.appendingPathComponent("\(kid).pub").path
        try pair.publicPEM.write(toFile: pub, atomically: true, encoding: .utf8)
        let out = String(decoding: try TestKeys.openssl(["rsa", "-pubin", "-in", pub, "-modulus", "-noout"]), as: UTF8.self)
        let hex = out.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: "")
        return ["kty": "RSA", "kid": kid, "n": Base64URL.encode(Self.bytes(hex: hex)), "e": "AQAB"]
    }

    private func cliECJWK(_ pair: TestKeys.Pair, kid: String, crv: String, size: Int) throws -> [String: Any] {
        let pub = TestKeys.dir.appendingPathComponent("\(kid).pub").path
        try pair.publicPEM.write(toFile: pub, atomically: true, encoding: .utf8)
        let text = String(decoding: try TestKeys.openssl(["ec", "-pubin", "-in", pub, "-text", "-noout"]), as: UTF8.self)
        // "pub:\n    04:ab:…\n    …\nASN1 OID: …"
        let afterPub = text.components(separatedBy: "pub:")[1].components(separatedBy: "ASN1")[0]
        let point = Self.bytes(hex: afterPub.filter { $0.isHexDigit })
        XCTAssertEqual(point.first, 4)
        return ["kty": "EC", "kid": kid, "crv": crv,
                "x": Base64URL.encode(point[1...size]), "y": Base64URL.encode(point[(size + 1)...])]
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
        return out
    }

    // MARK: parsing

    func testGeneratedKeysRoundTripThroughJSON() throws {
        for k in [Self.rsa, Self.ec] {
            let pub = try parse(k.publicJSON)
            XCTAssertEqual(pub.material, k.material)
            XCTAssertFalse(pub.isPrivate)
            XCTAssertEqual(pub.kid, k.kid)
            XCTAssertEqual(try JSONWebKey(json: k.privateJSON, allowPrivate: true), k)
        }
        XCTAssertEqual(Self.rsa.modulusBits, 2048)
        XCTAssertEqual(Self.rsa.algorithms, [.rs256])
        XCTAssertEqual(Self.ec.algorithms, [.es256])
    }

    func testAlgorithmsFollowTypeAndCurveWithoutAlg() throws {
        var j = Self.rsa.publicJSON
        j["alg"] = nil
        XCTAssertEqual(try parse(j).algorithms, [.rs256, .rs384, .rs512])
        let p384 = try JWKKeyBuilder.generate(.ec384)
        var e = p384.publicJSON
        e["alg"] = nil
        XCTAssertEqual(try parse(e).algorithms, [.es384])
    }

    func testRejectsShortModulusAndBadShapes() {
        let shortN = Base64URL.encode([0xC1] + [UInt8](repeating: 0x55, count: 63)) // 512 bits
        let cases: [(String, [String: Any])] = [
            ("512-bit modulus", ["kty": "RSA", "kid": "short", "n": shortN, "e": "AQAB"]),
            ("2040-bit modulus", ["kty": "RSA", "n": Base64URL.encode([0x01] + [UInt8](repeating: 0xFF, count: 255)), "e": "AQAB"]),
            ("RSA with ES256 alg", Self.rsa.publicJSON.merging(["alg": "ES256"]) { $1 }),
            ("P-256 with ES384 alg", Self.ec.publicJSON.merging(["alg": "ES384"]) { $1 }),
            ("HS256 alg", Self.rsa.publicJSON.merging(["alg": "HS256"]) { $1 }),
            ("none alg", Self.rsa.publicJSON.merging(["alg": "none"]) { $1 }),
            ("encryption key", Self.rsa.publicJSON.merging(["use": "enc"]) { $1 }),
            ("key_ops without verify", Self.rsa.publicJSON.merging(["key_ops": ["encrypt"]]) { $1 }),
            ("symmetric key", ["kty": "oct", "k": "c2VjcmV0"]),
            ("OKP key", ["kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"]),
            ("unknown curve", Self.ec.publicJSON.merging(["crv": "P-521"]) { $1 }),
            ("short x", Self.ec.publicJSON.merging(["x": Base64URL.encode([UInt8](repeating: 1, count: 31))]) { $1 }),
            ("padded base64", Self.rsa.publicJSON.merging(["e": "AQAB=="]) { $1 }),
            ("missing e", Self.rsa.publicJSON.merging(["e": NSNull()]) { $1 }),
            ("numeric kid", Self.rsa.publicJSON.merging(["kid": 7]) { $1 }),
            ("private key in a public set", Self.ec.privateJSON),
        ]
        for (name, json) in cases {
            XCTAssertThrowsError(try parse(json), name) { XCTAssertTrue($0 is JSONWebKey.Rejected, name) }
        }
    }

    func testShortModulusReasonNamesTheBits() {
        let shortN = Base64URL.encode([0xC1] + [UInt8](repeating: 0x55, count: 63))
        XCTAssertThrowsError(try parse(["kty": "RSA", "kid": "short", "n": shortN, "e": "AQAB"])) { e in
            XCTAssertTrue("\(e)".contains("512 bits"), "\(e)")
        }
    }

    func testLeadingZeroInModulusIsNotCounted() throws {
        guard case .rsa(let n, _) = Self.rsa.material else { return XCTFail() }
        let k = try parse(["kty": "RSA", "n": Base64URL.encode([0] + n), "e": "AQAB"])
        XCTAssertEqual(k.modulusBits, 2048)
        XCTAssertEqual(k.material, .rsa(n: n, e: [1, 0, 1]))
    }

    // MARK: OpenSSL

    func testPublicPEMIsTheKeyTheCLIMade() throws {
        let rsa = try parse(try cliRSAJWK(TestKeys.rsa, kid: "cli-rsa"))
        XCTAssertEqual(try JWKKeyBuilder.publicPEM(rsa), TestKeys.rsa.publicPEM)
        let ec = try parse(try cliECJWK(TestKeys.ec, kid: "cli-ec", crv: "P-256", size: 32))
        XCTAssertEqual(try JWKKeyBuilder.publicPEM(ec), TestKeys.ec.publicPEM)
        XCTAssertEqual(OpenSSLShim.publicKeyKind(pem: try JWKKeyBuilder.publicPEM(Self.rsa)), .rsa(bits: 2048))
        XCTAssertEqual(OpenSSLShim.publicKeyKind(pem: try JWKKeyBuilder.publicPEM(Self.ec)), .ecP256)
    }

    func testPointOffTheCurveIsRefused() throws {
        guard case .ec(_, let x, var y) = Self.ec.material else { return XCTFail() }
        y[31] ^= 1
        let k = try parse(["kty": "EC", "crv": "P-256", "x": Base64URL.encode(x), "y": Base64URL.encode(y)])
        XCTAssertThrowsError(try JWKKeyBuilder.publicPEM(k))
    }

    func testMismatchedPrivateParametersAreRefused() throws {
        var j = Self.ec.privateJSON
        j["d"] = (try JWKKeyBuilder.generate(.ec)).privateJSON["d"]
        let k = try JSONWebKey(json: j, allowPrivate: true)
        XCTAssertThrowsError(try JWKKeyBuilder.privatePEM(k))
        XCTAssertThrowsError(try JWKKeyBuilder.privatePEM(try parse(Self.rsa.publicJSON)))
    }

    // MARK: sets

    private func document(_ keys: [[String: Any]]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: ["keys": keys]))
    }

    func testSetSkipsUnusableKeysAndKeepsTheRest() throws {
        let set = try JWKSet(document: document([
            ["kty": "oct", "k": "c2VjcmV0", "kid": "hmac"],
            Self.rsa.publicJSON,
            Self.rsa.publicJSON.merging(["use": "enc", "kid": "enc"]) { $1 },
            Self.ec.publicJSON,
            Self.ec.publicJSON, // repeated kid
        ]))
        XCTAssertEqual(set.keys.map(\.kid), ["r1", "e1"])
        XCTAssertEqual(set.skipped.map(\.kid), ["hmac", "enc", "e1"])
    }

    func testUnusableDocumentsAreErrors() {
        for doc in ["[]", "{}", #"{"keys":{}}"#, #"{"keys":[]}"#, #"{"keys":[{"kty":"oct","k":"AA"}]}"#, "not json"] {
            XCTAssertThrowsError(try JWKSet(document: Array(doc.utf8)), doc) { XCTAssertTrue($0 is JWKSet.Invalid, doc) }
        }
        XCTAssertThrowsError(try JWKSet(document: [UInt8](repeating: 32, count: JWKSet.maxDocumentBytes + 1)))
    }

    func testSelection() throws {
        var rsaNoAlg = Self.rsa.publicJSON
        rsaNoAlg["alg"] = nil
        rsaNoAlg["kid"] = "r2"
        let set = try JWKSet(document: document([Self.rsa.publicJSON, Self.ec.publicJSON, rsaNoAlg]))
        XCTAssertEqual(set.select(kid: "r1", alg: .rs256), .key(index: 0))
        XCTAssertEqual(set.select(kid: "e1", alg: .es256), .key(index: 1))
        XCTAssertEqual(set.select(kid: "r2", alg: .rs512), .key(index: 2))
        XCTAssertEqual(set.select(kid: "e1", alg: .rs256), .algorithmMismatch)
        XCTAssertEqual(set.select(kid: "r1", alg: .rs384), .algorithmMismatch, "the key pins RS256")
        XCTAssertEqual(set.select(kid: "nope", alg: .rs256), .unknownKid)
        XCTAssertEqual(set.select(kid: nil, alg: .es256), .key(index: 1), "one EC key: no kid needed")
        XCTAssertEqual(set.select(kid: nil, alg: .rs256), .ambiguous(candidates: 2))
        XCTAssertEqual(set.select(kid: nil, alg: .rs384), .key(index: 2))
        XCTAssertEqual(set.select(kid: nil, alg: .es384), .ambiguous(candidates: 0))
    }

    func testSnapshotMovesKeysOpenSSLRefusesToSkipped() throws {
        guard case .ec(_, let x, var y) = Self.ec.material else { return XCTFail() }
        y[0] ^= 0x40
        let bad: [String: Any] = ["kty": "EC", "crv": "P-256", "kid": "off-curve", "x": Base64URL.encode(x), "y": Base64URL.encode(y)]
        let snap = try JWKSnapshot(document: document([bad, Self.rsa.publicJSON]))
        XCTAssertEqual(snap.kids, ["r1"])
        XCTAssertEqual(snap.keySet.skipped.map(\.kid), ["off-curve"])
        XCTAssertThrowsError(try JWKSnapshot(document: document([bad])))
    }

    func testAlgorithmListParsing() throws {
        XCTAssertEqual(try JWKAlgorithm.parseList("RS256, ES256"), [.rs256, .es256])
        for bad in ["", "HS256", "none", "rs256", "RS256,"] {
            XCTAssertThrowsError(try JWKAlgorithm.parseList(bad), bad)
        }
    }
}
