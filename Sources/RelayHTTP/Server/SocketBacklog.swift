import CLibevent
import Glibc

extension HTTPExchange {
    /// The client's backlog, bytes: what `write` accepted and libevent has not yet
    /// handed to the kernel, plus what the kernel holds unsent (`SIOCOUTQNSD`, Linux
    /// `tcp(7)`: queued but not yet sent, so bytes in flight do not count). A client
    /// that reads slowly fills its small receive window, and then this grows. Used by
    /// the slow-link coalescing (docs/PROTOCOL.md §4), separately from the slow-consumer cut.
    public var unsentBytes: Int {
        var n = pendingOutputBytes
        let fd = socket
        if isOpen && fd >= 0 {
            var queued: CInt = 0
            if ioctl(fd, SocketBacklog.siocOutQNotSent, &queued) == 0, queued > 0 { n += Int(queued) }
        }
        return n
    }
}

/// Linux ioctl numbers for a socket's send queue (`<linux/sockios.h>`).
public enum SocketBacklog {
    /// `SIOCOUTQNSD`: bytes in the send queue not yet sent.
    public static let siocOutQNotSent: UInt = 0x894B
}
