/// What a `ConnectionGate` reports to the listener that owns it (the relay's
/// `HTTPListener`): counts, the pending-request cap, and lingering closes. Loop thread only.
public protocol ConnectionGateHost: AnyObject {
    /// A gate's connection started (+1) or finished (-1) sending a request. Returns `false`
    /// when this start is over `RELAY_MAX_PENDING_REQUESTS` (the gate then refuses it).
    func pendingChanged(by delta: Int) -> Bool
    /// A request head was refused by the framing checks (`relay_request_head_rejections_total`).
    func countHeadRejection()
    /// The connection's first request head was accepted (once per connection): from now on
    /// it is never shed for descriptors (`ConnectionShedding`).
    func firstHeadArrived(_ gate: ConnectionGate)
    /// A request ran out of `RELAY_REQUEST_TIMEOUT` (`relay_request_timeouts_total`).
    func countDeadlineCut()
    /// Keeps a dup of a refused connection's socket open briefly, reading and discarding,
    /// so the JSON answer already sent is not destroyed by a reset (RFC 9112 §9.6).
    func linger(fd: Int32)
}
