import XCTest
import RelayAuth

/// `StandardWebhookSigner` against the Standard Webhooks reference libraries' signing
/// vector (libraries/go/webhook_test.go `TestWebhookSign`, the same in every library).
final class StandardWebhookSignerTests: XCTestCase {
    func testSignsTheSpecificationsTestVector() throws {
        let signer = try StandardWebhookSigner(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        XCTAssertEqual(signer.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330,
                                        body: Array(#"{"test": 2432232314}"#.utf8)),
                       "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    func testEveryPartOfTheSignedContentChangesTheSignature() throws {
        let signer = try StandardWebhookSigner(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let base = signer.signature(id: "msg_1", timestamp: 100, body: Array("{}".utf8))
        XCTAssertNotEqual(signer.signature(id: "msg_2", timestamp: 100, body: Array("{}".utf8)), base)
        XCTAssertNotEqual(signer.signature(id: "msg_1", timestamp: 101, body: Array("{}".utf8)), base)
        XCTAssertNotEqual(signer.signature(id: "msg_1", timestamp: 100, body: Array("{ }".utf8)), base)
        let other = try StandardWebhookSigner(secret: "whsec_" + Data(repeating: 7, count: 32).base64EncodedString())
        XCTAssertNotEqual(other.signature(id: "msg_1", timestamp: 100, body: Array("{}".utf8)), base)
    }

    func testRefusesSecretsThatAreNotWhsecBase64OfTwentyFourToSixtyFourBytes() {
        for bad in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!",
                    "whsec_" + Data(repeating: 1, count: 23).base64EncodedString(),
                    "whsec_" + Data(repeating: 1, count: 65).base64EncodedString()] {
            XCTAssertThrowsError(try StandardWebhookSigner(secret: bad), bad)
        }
        for n in [24, 32, 64] {
            XCTAssertNoThrow(try StandardWebhookSigner(secret: "whsec_" + Data(repeating: 1, count: n).base64EncodedString()))
        }
    }
}
