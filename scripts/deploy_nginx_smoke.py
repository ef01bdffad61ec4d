#!/usr/bin/env python3
"""Real nginx (deploy/nginx.conf, rendered by scripts/render-nginx-conf.sh) in front of stub
relays: SSE passes unbuffered, a resume and a reset reach another instance, and headers and
timeouts are what the relay needs. `deploy_checks.py nginx-smoke NGINX_BIN RENDER_SCRIPT`
runs it (scripts/validate-deploy.sh)."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

from deploy_check_report import check, finish


# ------------------------------------------------------------------------------ nginx smoke test
class StubRelay(threading.Thread):
    """A fake relay: SSE over HTTP/1.1 chunked, echoing what it received. mode='reset' reads a
    request fully and then resets the connection without answering (an instance that died after
    the request reached it)."""

    def __init__(self, name, mode="sse"):
        super().__init__(daemon=True)
        self.name_, self.mode = name, mode
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.seen = []          # (method, path, headers)
        self.lock = threading.Lock()

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        try:
            f = c.makefile("rb")
            line = f.readline().decode()
            if not line:
                return
            method, path, _ = line.split(" ", 2)
            headers = {}
            while True:
                h = f.readline().decode()
                if h in ("\r\n", "\n", ""):
                    break
                k, v = h.split(":", 1)
                headers[k.strip().lower()] = v.strip()
            body = f.read(int(headers.get("content-length", "0") or 0))
            with self.lock:
                self.seen.append((method, path, headers, body))
            if self.mode == "reset":
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                c.close()
                return
            if path == "/healthz":
                msg = self.name_.encode()
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(msg), msg))
                c.close()
                return
            # No X-Accel-Buffering here on purpose: nginx.conf itself must not buffer.
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                      b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")

            def chunk(s):
                b = s.encode()
                c.sendall(b"%x\r\n%s\r\n" % (len(b), b))

            first = {"instance": self.name_, "method": method,
                     "auth": headers.get("authorization"), "rid": headers.get("x-request-id"),
                     "leid": headers.get("last-event-id"), "conn": headers.get("connection")}
            chunk("retry: 1000\n\n")
            chunk("id: 1\ndata: " + json.dumps(first) + "\n\n")
            if headers.get("x-smoke-slow"):     # only the buffering check waits
                time.sleep(1.2)
            chunk(": ping\n\n")
            chunk('id: 2\ndata: {"type":"done","finish_reason":"stop"}\n\n')
            c.sendall(b"0\r\n\r\n")
            c.close()
        except OSError:
            pass


def http_request(port, method, path, headers=None, body=b"", timeout=10):
    """Raw HTTP/1.1 client: returns (status, headers, body, t_first_event, t_total)."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    hs = {"Host": "localhost", "Connection": "close", **(headers or {})}
    if body:
        hs["Content-Length"] = str(len(body))
        hs.setdefault("Content-Type", "application/json")
    req = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hs.items()) + "\r\n"
    s.sendall(req.encode() + body)
    data, t_first = b"", None
    while True:
        try:
            b = s.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        data += b
        if t_first is None and b"id: 1\n" in data:
            t_first = time.monotonic() - t0
    s.close()
    total = time.monotonic() - t0
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    rh = {}
    for ln in lines[1:]:
        if ":" in ln:
            k, v = ln.split(":", 1)
            rh[k.strip().lower()] = v.strip()
    if rh.get("transfer-encoding", "").lower() == "chunked":
        out, r = b"", rest
        while r:
            size_line, _, r = r.partition(b"\r\n")
            try:
                size = int(size_line.split(b";")[0], 16)
            except ValueError:
                break
            if size == 0:
                break
            out += r[:size]
            r = r[size + 2:]
        rest = out
    return status, rh, rest.decode(errors="replace"), t_first, total


def first_event(body):
    m = re.search(r"^id: 1\ndata: (.*)$", body, re.M)
    return json.loads(m.group(1)) if m else None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_nginx(nginx, render, listen_port, upstreams, tmp, tag):
    d = os.path.join(tmp, tag)
    os.makedirs(d)
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        subprocess.run([render, "--listen", f"127.0.0.1:{listen_port}", *upstreams], stdout=f, check=True)
    log = open(os.path.join(d, "out.log"), "w")
    p = subprocess.Popen([nginx, "-p", d, "-e", os.path.join(d, "error.log"), "-c", conf,
                          "-g", f"pid {d}/nginx.pid; daemon off;"], stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", listen_port), timeout=0.2).close()
            return p, os.path.join(d, "out.log")
        except OSError:
            if p.poll() is not None:
                break
            time.sleep(0.05)
    print(open(os.path.join(d, "out.log")).read())
    raise RuntimeError(f"nginx ({tag}) did not start")


def stop_nginx(p):
    if p.poll() is None:
        p.send_signal(signal.SIGQUIT)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def cmd_nginx_smoke(nginx, render):
    tmp = tempfile.mkdtemp(prefix="relay-nginx-smoke-")
    a, b, r = StubRelay("A"), StubRelay("B"), StubRelay("R", mode="reset")
    for s in (a, b, r):
        s.start()
    dead = free_port()      # nothing listens there: connection refused
    procs = []
    try:
        # LB 1: [dead, A, B] -- the dead instance is first, so each worker's first pick fails.
        p1port = free_port()
        p1, log1 = start_nginx(nginx, render, p1port, [f"127.0.0.1:{dead}", f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"], tmp, "lb1")
        procs.append(p1)

        st, h, body, t_first, total = http_request(p1port, "POST", "/api/chat/stream",
            {"Authorization": "Bearer tok-123", "X-Request-Id": "smoke-post-0000000001", "Accept-Encoding": "gzip",
             "X-Smoke-Slow": "1"},
            b'{"messages":[{"role":"user","content":"hi"}]}')
        ev = first_event(body) or {}
        check(st == 200, "nginx smoke: POST /api/chat/stream through the LB -> 200", f"status {st}")
        check(h.get("content-type", "").startswith("text/event-stream"), "nginx smoke: text/event-stream passed through")
        check("content-encoding" not in h, "nginx smoke: no gzip on the event stream even with Accept-Encoding: gzip", str(h.get("content-encoding")))
        check(t_first is not None and t_first < 0.9 and total >= 1.1,
              "nginx smoke: first event arrives before the stream ends (not buffered)",
              f"first event after {t_first}s, stream took {total:.2f}s")
        check(ev.get("auth") == "Bearer tok-123" and ev.get("rid") == "smoke-post-0000000001",
              "nginx smoke: Authorization and X-Request-Id reach the relay", str(ev))
        check(ev.get("conn") in (None, ""), "nginx smoke: no Connection header forwarded upstream", str(ev.get("conn")))
        check(body.rstrip().endswith('"finish_reason":"stop"}'), "nginx smoke: whole stream delivered")

        st, h, body, _, _ = http_request(p1port, "GET", "/api/chat/stream/smoke-post-0000000001",
                                         {"Authorization": "Bearer tok-123", "Last-Event-ID": "7"})
        ev = first_event(body) or {}
        check(st == 200 and ev.get("leid") == "7", "nginx smoke: GET resume passes Last-Event-ID", f"{st} {ev}")

        instances, statuses = set(), []
        for i in range(8):
            st, _, body, _, _ = http_request(p1port, "GET", "/healthz")
            statuses.append(st)
            instances.add(body.strip())
        check(all(s == 200 for s in statuses), "nginx smoke: every request answered although one instance is down", str(statuses))
        check(instances == {"A", "B"}, "nginx smoke: round robin reaches every live instance (no stickiness)", str(instances))

        ids = [f"smoke-rr-{i:012d}" for i in range(6)]
        sts = []
        for rid in ids:
            st, _, _, _, _ = http_request(p1port, "POST", "/api/chat/stream", {"X-Request-Id": rid}, b'{"messages":[]}')
            sts.append(st)
        seen = [hd.get("x-request-id") for s in (a, b) for (m, _, hd, _) in s.seen if m == "POST"]
        check(all(s == 200 for s in sts), "nginx smoke: POSTs whose connect failed were retried on another instance", str(sts))
        check(all(seen.count(rid) == 1 for rid in ids), "nginx smoke: each POST reached exactly one relay")
        time.sleep(0.2)
        retried = [ln for ln in open(log1) if f"127.0.0.1:{dead}, " in ln]
        check(bool(retried), "nginx smoke: access log shows a failed connect followed by another instance",
              "no 'up=dead, live' entry")

        # LB 2: [R, A] where R accepts the request and then resets: the request reached a relay.
        p2port = free_port()
        p2, _ = start_nginx(nginx, render, p2port, [f"127.0.0.1:{r.port} max_fails=0", f"127.0.0.1:{a.port} max_fails=0"], tmp, "lb2")
        procs.append(p2)
        a.seen.clear()
        results = {}
        for i in range(6):
            rid = f"smoke-reset-{i:010d}"
            st, _, body, _, _ = http_request(p2port, "POST", "/api/chat/stream", {"X-Request-Id": rid}, b'{"messages":[]}')
            results[rid] = (st, body)
        at_r = {hd.get("x-request-id") for (m, _, hd, _) in r.seen if m == "POST"}
        at_a = [hd.get("x-request-id") for (m, _, hd, _) in a.seen if m == "POST"]
        check(bool(at_r), "nginx smoke: some POSTs reached the resetting instance (test is meaningful)")
        check(not (at_r & set(at_a)), "nginx smoke: a POST that reached a relay is never replayed on another", str(at_r & set(at_a)))
        bad = {rid: v[0] for rid, v in results.items() if rid in at_r and not (v[0] == 503 and '"code":"not_ready"' in v[1])}
        check(not bad, "nginx smoke: such a POST fails with 503 {\"error\":{\"code\":\"not_ready\"}} (the client retries with its X-Request-Id)", str(bad))
        check(all(results[rid][0] == 200 for rid in at_a), "nginx smoke: the other POSTs succeed")

        r.seen.clear()
        a.seen.clear()
        gsts = []
        for i in range(6):
            st, _, _, _, _ = http_request(p2port, "GET", f"/api/chat/stream/smoke-get-{i:012d}", {"Last-Event-ID": "3"})
            gsts.append(st)
        got_r = {p for (m, p, _, _) in r.seen}
        got_a = {p for (m, p, _, _) in a.seen}
        check(all(s == 200 for s in gsts), "nginx smoke: idempotent GET resumes are retried on another instance", str(gsts))
        check(bool(got_r & got_a), "nginx smoke: a GET that hit the resetting instance was replayed elsewhere")
    finally:
        for p in procs:
            stop_nginx(p)
        for s in (a, b, r):
            s.sock.close()
    finish()
