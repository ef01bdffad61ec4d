import RelayClient
import RelayTestKit

/// The kit's `VirtualClock` is the client kit's clock in these tests: it has `nowMs()` and
/// `sleep(ms:)` as `RelayClock` asks.
extension VirtualClock: RelayClock {}
