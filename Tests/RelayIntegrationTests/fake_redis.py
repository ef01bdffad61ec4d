# A fake Redis for RedisConnectionFailureTests. argv: mode. Prints the port, then serves.
import socket, sys, threading, time
mode = sys.argv[1]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0)); ls.listen(64)
print(ls.getsockname()[1], flush=True)

def commands(buf):
    """Complete RESP arrays in buf: (list of arg lists, rest)."""
    out = []
    while True:
        if not buf.startswith(b"*"): return out, buf
        i = buf.find(b"\r\n")
        if i < 0: return out, buf
        n = int(buf[1:i]); p = i + 2; args = []
        ok = True
        for _ in range(n):
            j = buf.find(b"\r\n", p)
            if j < 0: ok = False; break
            ln = int(buf[p+1:j]); p = j + 2
            if len(buf) < p + ln + 2: ok = False; break
            args.append(buf[p:p+ln]); p += ln + 2
        if not ok: return out, buf
        out.append(args); buf = buf[p:]

def serve(c):
    buf = b""; count = 0
    if mode == "close": c.close(); return
    try:
        while True:
            d = c.recv(65536)
            if not d: break
            buf += d
            cmds, buf = commands(buf)
            for a in cmds:
                count += 1
                if mode == "garbage" and count >= 3:
                    # pacing on purpose: a scripted peer that keeps the broken connection open 5 s
                    c.sendall(b"+OK\r\n!garbage\r\n+OK\r\n"); time.sleep(5); c.close(); return
                if mode == "half" and count >= 3:
                    # pacing on purpose: a scripted peer that stops mid-reply, then closes 0.2 s later
                    c.sendall(b"$10\r\nabc"); time.sleep(0.2); c.close(); return
                if mode == "rst" and count >= 3:
                    import struct
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); c.close(); return
                c.sendall(b"+OK\r\n")
    except OSError:
        pass
    c.close()

while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
