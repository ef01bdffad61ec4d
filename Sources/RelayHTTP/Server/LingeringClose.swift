import CLibevent
import Glibc
import RelayLoop

/// The last act of a refused connection (RFC 9112 §9.6 "tear-down"): the answer was sent and
/// the write side shut down; this keeps a duplicate of the socket open, reading and discarding
/// what the client still sends, until the client closes or `limitMs` passes. Closing at once
/// with unread input would make the kernel send a reset, which can destroy the answer before
/// the client reads it. Owns `fd` and its `event`; loop thread only.
public final class LingeringClose {
    private var event: OpaquePointer?
    private let fd: Int32
    private let done: (Int32) -> Void
    private var finished = false

    /// Starts lingering on `fd` (owned from now on); `done(fd)` is called once at the end.
    public init(loop: EventLoop, fd: Int32, limitMs: Int = 2_000, done: @escaping (Int32) -> Void) {
        self.fd = fd
        self.done = done
        event = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { fd, what, arg in
            let me = Unmanaged<LingeringClose>.fromOpaque(arg!).takeUnretainedValue()
            withExtendedLifetime(me) { me.ready(timedOut: what & Int16(EV_TIMEOUT) != 0) }
        }, Unmanaged.passUnretained(self).toOpaque())
        var tv = timeval(tv_sec: limitMs / 1000, tv_usec: (limitMs % 1000) * 1000)
        event_add(event, &tv)
    }

    deinit {
        if let e = event { event_free(e) }
        Glibc.close(fd)
    }

    private func ready(timedOut: Bool) {
        guard !finished else { return }
        if !timedOut {
            var buf = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 0 { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
                break  // EOF or error
            }
        }
        finished = true
        if let e = event { event_del(e) }
        done(fd)
    }
}
