import CLibevent
import Foundation
import RelayCore
import RelayHTTP

/// `send-floor`: what the one write per delivered event that a fast client gets (one
/// event per token) costs by itself on this machine, with no relay.
///
/// N loopback TCP connections; the sending thread writes one SSE event framed exactly
/// as the relay frames it (`WireFrame.event`: HTTP/1.1 chunk + `id:`/`data:` lines of a
/// bench delta) to each connection at `rate` events/s, spread evenly, with a 1 ms
/// sleep per pass like a loop timer; a second thread reads everything. Reports the
/// sending thread's CPU per `send`, user and kernel (`getrusage(RUSAGE_THREAD)`). On
/// loopback the kernel share includes the receiving socket's TCP work (it runs in the
/// sender's context), exactly as it does for the relay in the `stream` scenario, so
/// this is the floor under "server CPU per delivered event" there.
extension Runner {
    func sendFloorScenario() -> Bool {
        let frame = WireFrame.event(seq: 1234, json: BenchEvent.delta(micros: 1_733_000_000_000_000, k: 1234)).bytes
        log("scenario send-floor: N steps \(opts.steps), \(opts.rate) events/s per connection, \(frame.count)-byte frames, \(opts.duration) s per step")
        for n in opts.steps {
            guard let r = sendFloor(connections: n, rate: opts.rate, seconds: opts.duration, frame: frame) else {
                log("send-floor N=\(n): could not set up \(n) loopback connections")
                return false
            }
            log("  N=\(n): \(Int(r.sendsPerSec)) sends/s, user \(fmt(r.userMicros, 2)) µs + kernel \(fmt(r.kernelMicros, 2)) µs = \(fmt(r.userMicros + r.kernelMicros, 2)) µs per send")
            emit(["scenario": "send-floor", "n": n, "rate": opts.rate, "duration_s": opts.duration, "frame_bytes": frame.count,
                  "sends_per_s": r.sendsPerSec, "user_us_per_send": r.userMicros, "kernel_us_per_send": r.kernelMicros,
                  "cpu_us_per_send": r.userMicros + r.kernelMicros])
        }
        return true
    }

    private struct SendFloorResult {
        var sendsPerSec: Double
        var userMicros: Double
        var kernelMicros: Double
    }

    private func sendFloor(connections n: Int, rate: Double, seconds: Double, frame: [UInt8]) -> SendFloorResult? {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { return nil }
        defer { close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) == 0 && getsockname(listener, $0, &len) == 0 }
        }
        guard bound, listen(listener, 4096) == 0 else { return nil }
        var readers: [Int32] = [], writers: [Int32] = []
        defer { for fd in readers + writers { close(fd) } }
        for _ in 0..<n {
            let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard c >= 0 else { return nil }
            readers.append(c)
            let ok = withUnsafePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            let s = accept(listener, nil, nil)
            guard ok, s >= 0 else { return nil }
            writers.append(s)
            var one: Int32 = 1
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }

        // The reader: drains every connection until the writer closes it.
        let readerDone = DispatchSemaphore(value: 0)
        let reader = Thread { [readers] in
            var fds = readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var buf = [UInt8](repeating: 0, count: 65_536)
            var open = fds.count
            while open > 0 {
                let k = poll(&fds, nfds_t(fds.count), 1000)
                if k < 0 && errno != EINTR { break }
                for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                    if buf.withUnsafeMutableBytes({ read(fds[i].fd, $0.baseAddress, $0.count) }) <= 0 {
                        fds[i].fd = -1  // poll(2) skips negative fds
                        open -= 1
                    }
                }
            }
            readerDone.signal()
        }
        reader.start()

        // The writer (this thread): connection i is due every 1/rate s, phase i/n.
        let period = 1.0 / rate
        let t0 = monoSeconds()
        var due = (0..<n).map { t0 + period * Double($0) / Double(n) }
        let end = t0 + seconds
        var sends = 0
        let ru0 = threadCPU()
        frame.withUnsafeBytes { f in
            while true {
                let now = monoSeconds()
                if now >= end { break }
                for i in 0..<n where due[i] <= now {
                    _ = send(writers[i], f.baseAddress, f.count, Int32(MSG_NOSIGNAL))
                    sends += 1
                    due[i] += period
                }
                _ = poll(nil, 0, 1)  // a 1 ms timer tick, as the relay's loop would sleep
            }
        }
        let ru1 = threadCPU()
        let elapsed = monoSeconds() - t0
        for fd in writers { shutdown(fd, Int32(SHUT_WR)) }
        readerDone.wait()
        guard sends > 0 else { return nil }
        return SendFloorResult(sendsPerSec: Double(sends) / elapsed,
                               userMicros: (ru1.user - ru0.user) * 1e6 / Double(sends),
                               kernelMicros: (ru1.kernel - ru0.kernel) * 1e6 / Double(sends))
    }

    private func monoSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The calling thread's CPU time (getrusage(2), `RUSAGE_THREAD`).
    private func threadCPU() -> CPUTimes {
        var ru = rusage()
        getrusage(1, &ru)  // RUSAGE_THREAD (Linux), not exported to Swift
        return CPUTimes(user: Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6,
                        kernel: Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6)
    }
}
