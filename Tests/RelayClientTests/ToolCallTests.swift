import XCTest
import RelayCore
@testable import RelayClient

/// `ToolCall.decodeInput`: the ended call's input as the app's own `Decodable` type.
final class ToolCallTests: XCTestCase {
    struct Weather: Decodable, Equatable {
        var city: String
        var days: Int
    }

    func testAnEndedCallsInputDecodesAsTheAppsType() throws {
        let input = try LenientJSON.parse(#"{"city":"Riyadh","days":3}"#)
        let call = ToolCall(id: "call_1", name: "get_weather", arguments: #"{"city":"Riyadh","days":3}"#, input: input)
        XCTAssertEqual(try call.decodeInput(Weather.self), Weather(city: "Riyadh", days: 3))
    }

    func testARunningCallHasNoInputToDecode() throws {
        XCTAssertNil(try ToolCall(id: "call_1", name: "get_weather", arguments: #"{"ci"#).decodeInput(Weather.self))
    }

    func testAnInputOfAnotherShapeThrows() throws {
        let call = ToolCall(id: "call_1", name: "get_weather", input: try LenientJSON.parse(#"{"city":7}"#))
        XCTAssertThrowsError(try call.decodeInput(Weather.self))
    }
}
