#!/usr/bin/env python3
"""Semantic checks of StreamRelay's deployment files, run by scripts/validate-deploy.sh.

The schema validators (nginx -t, docker-compose config, kubernetes-validate) say a file is
well formed; these checks say it does what the relay needs (SSE-safe proxying, drain timing,
non-root, ...). Each subcommand prints one line per check and exits 1 if any failed.

  deploy_checks.py nginx-static CONF
  deploy_checks.py nginx-smoke NGINX_BIN RENDER_SCRIPT      real nginx in front of stub relays
  deploy_checks.py compose RESOLVED_YAML RAW_COMPOSE NGINX_CONF ENV_EXAMPLE
  deploy_checks.py k8s DIR
  deploy_checks.py dockerfile DOCKERFILE                   (needs dockerfile-parse)
  deploy_checks.py runtime-packages DOCKERFILE             prints the RUNTIME_PACKAGES ARG
"""
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

FAILED = []


def check(ok, what, detail=""):
    if ok:
        print(f"  ok    {what}")
    else:
        print(f"  FAIL  {what}" + (f": {detail}" if detail else ""))
        FAILED.append(what)
    return ok


def finish():
    sys.exit(1 if FAILED else 0)


def duration_seconds(v):
    """nginx / compose / relay durations: 75s, 1h, 1m30s, 500ms, bare seconds."""
    v = str(v).strip()
    if re.fullmatch(r"\d+", v):
        return float(v)
    total, units = 0.0, {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", v)
    if not parts or "".join(n + u for n, u in parts) != v:
        raise ValueError(f"not a duration: {v!r}")
    for n, u in parts:
        total += int(n) * units[u]
    return total


# --------------------------------------------------------------------------------------- nginx
def nginx_directives(text):
    """(context path, name, args) for each simple directive; comments stripped."""
    out, stack, cur = [], [], ""
    i, n = 0, len(text)
    tokens, tok, quote = [], "", None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and i + 1 < n:
                tok += text[i + 1]
                i += 2
                continue
            if c == quote:
                quote = None
                tokens.append(tok)
                tok = ""
            else:
                tok += c
        elif c in "\"'":
            quote = c
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c.isspace():
            if tok:
                tokens.append(tok)
                tok = ""
        elif c in ";{}":
            if tok:
                tokens.append(tok)
                tok = ""
            if c == ";":
                if tokens:
                    out.append(("/".join(stack), tokens[0], tokens[1:]))
            elif c == "{":
                stack.append(" ".join(tokens))
            else:
                stack.pop()
            tokens = []
        else:
            tok += c
        i += 1
    return out


def cmd_nginx_static(conf):
    text = open(conf).read()
    ds = nginx_directives(text)

    def find(name):
        return [(ctx, args) for ctx, d, args in ds if d == name]

    for m in ("BEGIN RELAY_UPSTREAMS", "END RELAY_UPSTREAMS", "BEGIN RELAY_LISTEN", "END RELAY_LISTEN"):
        check(len(re.findall(rf"^\s*# {m}$", text, re.M)) == 1, f"nginx: marker '# {m}' present once")
    check(any(a == ["off"] for _, a in find("proxy_buffering")) and not any(a != ["off"] for _, a in find("proxy_buffering")),
          "nginx: proxy_buffering off (everywhere it is set)")
    check(find("proxy_http_version") and all(a == ["1.1"] for _, a in find("proxy_http_version")), "nginx: proxy_http_version 1.1")
    check(any([x.lower() for x in a] == ["connection", ""] for _, a in find("proxy_set_header")), 'nginx: proxy_set_header Connection ""')
    gz = find("gzip")
    check(gz and all(a == ["off"] for _, a in gz), "nginx: gzip off", str(gz))
    rts = find("proxy_read_timeout")
    check(rts and all(duration_seconds(a[0]) >= 60 for _, a in rts), "nginx: every proxy_read_timeout >= 60s (heartbeat 15s)", str(rts))
    nu = find("proxy_next_upstream")
    nu_args = [x for _, a in nu for x in a]
    check(nu and "error" in nu_args and "timeout" in nu_args, "nginx: proxy_next_upstream error timeout", str(nu))
    check("non_idempotent" not in nu_args, "nginx: POST never replayed after it was sent (no non_idempotent)")
    tries = find("proxy_next_upstream_tries")
    check(tries and int(tries[0][1][0]) >= 2, "nginx: proxy_next_upstream_tries >= 2", str(tries))
    for bad in ("ip_hash", "hash", "sticky", "sticky_cookie_insert"):
        check(not find(bad), f"nginx: no sticky balancing ({bad})")
    headers = {a[0].lower(): a[1] if len(a) > 1 else "" for _, a in find("proxy_set_header")}
    for h, var in (("last-event-id", "$http_last_event_id"), ("authorization", "$http_authorization"),
                   ("x-request-id", "$http_x_request_id")):
        check(headers.get(h) == var, f"nginx: passes {h} ({var})", str(headers.get(h)))
    passes = find("proxy_pass")
    check(passes and all(a == ["http://relay_backend"] for _, a in passes), "nginx: every proxy_pass goes to upstream relay_backend")
    ups = [ctx for ctx, d, _ in ds if d == "server" and ctx.endswith("upstream relay_backend")]
    check(len(ups) >= 1, "nginx: upstream relay_backend has servers")
    check(not find("pid") and not find("client_body_temp_path"), "nginx: no pid/temp paths hard-coded (runs under -p PREFIX)")
    finish()


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


# ------------------------------------------------------------------------------------- compose
def cmd_compose(resolved, raw, nginx_conf, env_example):
    import yaml
    cfg = yaml.safe_load(open(resolved))
    raw_text = open(raw).read()
    # Services behind a profile (the optional `cluster` profile) are not part of the default
    # stack that these checks describe; the raw file says which they are.
    raw_services = (yaml.safe_load(raw_text) or {}).get("services", {})
    profiled = {n for n, s in raw_services.items() if isinstance(s, dict) and s.get("profiles")}
    services = {n: s for n, s in cfg.get("services", {}).items() if n not in profiled}

    def is_relay(s):
        b = s.get("build")
        return (isinstance(b, dict) and str(b.get("dockerfile", "")).endswith("deploy/Dockerfile")) or \
            str(s.get("image", "")).startswith("stream-relay")

    relays = {n: s for n, s in services.items() if is_relay(s)}
    replicas = sum(int((s.get("deploy") or {}).get("replicas", 1)) for s in relays.values())
    check(replicas >= 3, "compose: three relay instances", f"{replicas}")
    redis = [s for s in services.values() if str(s.get("image", "")).startswith("redis:7")]
    check(len(redis) == 1, "compose: one Redis 7 service")
    redis_name = next((n for n, s in services.items() if str(s.get("image", "")).startswith("redis:7")), "redis")
    check(bool(redis and redis[0].get("healthcheck", {}).get("test")), "compose: Redis has a healthcheck")
    cmd = [str(c) for c in (redis[0].get("command") or [])] if redis else []
    check(any(cmd[i:i + 2] == ["--appendonly", "yes"] for i in range(len(cmd))) and bool(redis[0].get("volumes")),
          "compose: Redis persists (AOF on a volume: revocations and budgets live only in Redis)")
    for n, s in relays.items():
        env = s.get("environment", {})
        if isinstance(env, list):
            env = dict(e.split("=", 1) for e in env)
        dep = s.get("depends_on", {})
        check(isinstance(dep, dict) and dep.get(redis_name, {}).get("condition") == "service_healthy",
              f"compose: {n} waits for a healthy Redis")
        check(env.get("REDIS_URL", "").startswith(f"redis://{redis_name}:"), f"compose: {n} REDIS_URL points at the Redis service")
        check(env.get("RELAY_LISTEN") == "0.0.0.0:8080", f"compose: {n} RELAY_LISTEN=0.0.0.0:8080")
        check(bool(s.get("healthcheck", {}).get("test")), f"compose: {n} has a healthcheck (nginx waits on it)")
        try:
            grace = duration_seconds(s.get("stop_grace_period", "10s"))
            drain = duration_seconds(env.get("RELAY_DRAIN_TIMEOUT", "30s"))
        except ValueError as e:
            grace, drain = 0, 1
            print("   ", e)
        check(grace > drain, f"compose: {n} stop_grace_period ({grace:g}s) > RELAY_DRAIN_TIMEOUT ({drain:g}s)")
    for key in ("RELAY_JWT_SECRET", "RELAY_ADMIN_KEY"):
        check(re.search(r"\$\{" + key + r"(:?[?-][^}]*)?\}", raw_text) is not None and
              re.search(r"\$\{" + key + r"[:]?\?", raw_text) is not None,
              f"compose: {key} comes from .env and is required (${{{key}:?...}})")
        check(re.search(rf"^{key}=", open(env_example).read(), re.M) is not None, f".env.example: defines {key}")
    lbs = {n: s for n, s in services.items() if str(s.get("image", "")).startswith("nginx")}
    check(len(lbs) == 1, "compose: one nginx service")
    for n, s in lbs.items():
        vols = [v if isinstance(v, str) else f"{v.get('source')}:{v.get('target')}" for v in s.get("volumes", [])]
        check(any("deploy/nginx.conf:" in v for v in vols), f"compose: {n} uses deploy/nginx.conf", str(vols))
        ports = [str(p) if not isinstance(p, dict) else f"{p.get('host_ip', '')}:{p.get('published')}:{p.get('target')}" for p in s.get("ports", [])]
        check(any(re.search(r"(^|:)8080:\d+", p) for p in ports), f"compose: {n} published on localhost:8080", str(ports))
        dep = s.get("depends_on", {})
        check(all(dep.get(r, {}).get("condition") == "service_healthy" for r in relays),
              f"compose: {n} waits for healthy relays")
    text = open(nginx_conf).read()
    block = re.search(r"# BEGIN RELAY_UPSTREAMS\n(.*?)# END RELAY_UPSTREAMS", text, re.S).group(1)
    hosts = set(re.findall(r"^\s*server\s+([^:\s]+):8080", block, re.M))
    check(hosts == set(relays), "compose: nginx.conf upstreams are exactly the relay services", f"{hosts} vs {set(relays)}")
    finish()


# ----------------------------------------------------------------------------------------- k8s
def cmd_k8s(d):
    import yaml
    docs = []
    for fn in sorted(os.listdir(d)):
        if fn.endswith((".yaml", ".yml")):
            docs += [x for x in yaml.safe_load_all(open(os.path.join(d, fn))) if x]
    by = {}
    for x in docs:
        by.setdefault(x["kind"], []).append(x)
    for kind, api in (("Deployment", "apps/v1"), ("Service", "v1"), ("HorizontalPodAutoscaler", "autoscaling/v2"),
                      ("PodDisruptionBudget", "policy/v1"), ("ConfigMap", "v1"), ("Secret", "v1")):
        check(len(by.get(kind, [])) == 1 and by[kind][0]["apiVersion"] == api, f"k8s: one {kind} ({api})")
    if FAILED:
        finish()
    dep, svc, hpa, pdb = by["Deployment"][0], by["Service"][0], by["HorizontalPodAutoscaler"][0], by["PodDisruptionBudget"][0]
    cm, sec = by["ConfigMap"][0], by["Secret"][0]
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    spec = pod["spec"]
    c = spec["containers"][0]
    check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(), "k8s: Deployment selector matches its pods")
    rp, lp = c.get("readinessProbe", {}), c.get("livenessProbe", {})
    check(rp.get("httpGet", {}).get("path") == "/readyz", "k8s: readinessProbe GET /readyz")
    check(lp.get("httpGet", {}).get("path") == "/healthz", "k8s: livenessProbe GET /healthz")
    pre = c.get("lifecycle", {}).get("preStop", {})
    cmd = pre.get("exec", {}).get("command", [])
    pre_s = 0.0
    if pre.get("sleep"):
        pre_s = float(pre["sleep"]["seconds"])
    elif cmd and os.path.basename(cmd[0]) == "sleep":
        pre_s = duration_seconds(cmd[1])
    check(pre_s > 0, "k8s: preStop sleep before SIGTERM", str(pre))
    cmdata, secdata = cm.get("data", {}), {**sec.get("stringData", {}), **sec.get("data", {})}
    drain = duration_seconds(cmdata.get("RELAY_DRAIN_TIMEOUT", "30s"))
    grace = spec.get("terminationGracePeriodSeconds", 30)
    check(grace >= pre_s + drain + 5, f"k8s: terminationGracePeriodSeconds {grace} >= preStop {pre_s:g} + drain {drain:g} + 5 s margin")
    check(grace <= pre_s + drain + 60, f"k8s: terminationGracePeriodSeconds {grace} not far above the drain")
    psc, csc = spec.get("securityContext", {}), c.get("securityContext", {})
    check(psc.get("runAsNonRoot") or csc.get("runAsNonRoot"), "k8s: runAsNonRoot")
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    check(uid is not None and uid != 0, "k8s: runAsUser is a non-root uid", str(uid))
    check(csc.get("readOnlyRootFilesystem") is True, "k8s: readOnlyRootFilesystem")
    check(csc.get("allowPrivilegeEscalation") is False, "k8s: allowPrivilegeEscalation false")
    check("ALL" in csc.get("capabilities", {}).get("drop", []), "k8s: drops all capabilities")
    res = c.get("resources", {})
    check({"cpu", "memory"} <= set(res.get("requests", {})) and "memory" in res.get("limits", {}),
          "k8s: cpu/memory requests and a memory limit")
    port_names = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    check(8080 in port_names.values(), "k8s: container port 8080")
    refs = {("cm", e["configMapRef"]["name"]) for e in c.get("envFrom", []) if "configMapRef" in e} | \
           {("sec", e["secretRef"]["name"]) for e in c.get("envFrom", []) if "secretRef" in e}
    check(("cm", cm["metadata"]["name"]) in refs and ("sec", sec["metadata"]["name"]) in refs,
          "k8s: the Deployment takes its env from the ConfigMap and the Secret")
    check("REDIS_URL" in cmdata or "REDIS_URL" in secdata, "k8s: REDIS_URL set (external Redis)")
    for k in ("RELAY_JWT_SECRET", "RELAY_ADMIN_KEY"):
        check(k in secdata and k not in cmdata, f"k8s: {k} in the Secret, not the ConfigMap")
        check("CHANGE-ME" in str(secdata.get(k)), f"k8s: {k} is a marked placeholder, not a real secret")
    check(cmdata.get("RELAY_LISTEN", "").endswith(":8080"), "k8s: RELAY_LISTEN on 8080")
    redis_workloads = [x for x in docs if x["kind"] in ("Deployment", "StatefulSet") and "redis" in x["metadata"]["name"]]
    check(not redis_workloads, "k8s: Redis is external (no Redis workload here)")
    check(svc["spec"]["selector"].items() <= labels.items(), "k8s: Service selects the relay pods")
    check(svc["spec"].get("sessionAffinity", "None") == "None", "k8s: Service has no session affinity")
    tps = [p.get("targetPort") for p in svc["spec"]["ports"]]
    check(all(t in port_names or t in port_names.values() for t in tps), "k8s: Service targetPort is the container port", str(tps))
    tgt = hpa["spec"]["scaleTargetRef"]
    check(tgt["kind"] == "Deployment" and tgt["name"] == dep["metadata"]["name"], "k8s: HPA scales the Deployment")
    check(hpa["spec"].get("minReplicas", 1) >= 2, "k8s: HPA keeps at least 2 replicas")
    check(pdb["spec"]["selector"]["matchLabels"].items() <= labels.items(), "k8s: PDB selects the relay pods")
    mu = pdb["spec"].get("maxUnavailable")
    ma = pdb["spec"].get("minAvailable")
    check((mu is not None and str(mu) not in ("0", "0%")) or (ma is not None and int(str(ma).rstrip("%")) < hpa["spec"].get("minReplicas", 1)),
          "k8s: PDB allows a disruption (drains are possible) while keeping capacity")
    finish()


# ---------------------------------------------------------------------------------- Dockerfile
def global_args(df_text):
    """ARG defaults declared before the first FROM (continuation lines joined)."""
    text = re.sub(r"\\\n", " ", df_text)
    args = {}
    for ln in text.splitlines():
        s = ln.strip()
        if s.upper().startswith("FROM "):
            break
        m = re.match(r"ARG\s+(\w+)=(.*)$", s, re.I)
        if m:
            v = m.group(2).strip()
            args[m.group(1)] = shlex.split(v)[0] if v.startswith(('"', "'")) else v
    return args


def cmd_runtime_packages(path):
    pk = global_args(open(path).read()).get("RUNTIME_PACKAGES", "")
    print(" ".join(pk.split()))


def cmd_dockerfile(path):
    from dockerfile_parse import DockerfileParser
    text = open(path).read()
    dfp = DockerfileParser(path=path)
    instr = [i for i in dfp.structure if i["instruction"] != "COMMENT"]   # parsed instructions
    check(bool(instr), f"Dockerfile: parsed ({len(instr)} instructions)")
    gargs = global_args(text)

    def expand(v):
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: gargs.get(m.group(1) or m.group(2), m.group(0)), v)

    stages, cur = [], None
    for i in instr:
        if i["instruction"] == "FROM":
            cur = {"from": i["value"], "ins": []}
            stages.append(cur)
        elif cur is not None:
            cur["ins"].append(i)
    check(len(stages) >= 2, "Dockerfile: multi-stage", f"{len(stages)} stage(s)")
    if len(stages) < 2:
        finish()
    build, final = stages[0], stages[-1]
    bimg = expand(build["from"].split()[0])
    check(re.fullmatch(r"swift:6(\.\d+)*-bookworm", bimg) is not None, f"Dockerfile: builds on the Swift toolchain image ({bimg})")
    fimg = final["from"].split()[0]
    check(fimg == "debian:bookworm-slim", f"Dockerfile: runs on debian:bookworm-slim ({fimg})")
    bruns = " ".join(i["value"] for i in build["ins"] if i["instruction"] == "RUN")
    for p in ("libhiredis-dev", "libevent-dev", "libjwt-dev", "libcurl4-openssl-dev", "libmimalloc-dev", "pkg-config"):
        check(re.search(rf"(^|\s){re.escape(p)}(\s|$)", bruns) is not None, f"Dockerfile: build stage installs {p}")
    check(re.search(r"swift build -c release --product stream-relay", bruns) is not None,
          "Dockerfile: swift build -c release --product stream-relay")
    check("runtime-libs.sh --check" in bruns, "Dockerfile: build stage checks RUNTIME_PACKAGES against ldd of the binary")
    check("runtime-libs.sh --swift" in bruns, "Dockerfile: Swift runtime .so files taken from ldd of the binary")
    fruns = " ".join(i["value"] for i in final["ins"] if i["instruction"] == "RUN")
    check("RUNTIME_PACKAGES" in fruns and "apt-get install" in fruns, "Dockerfile: runtime stage installs RUNTIME_PACKAGES")
    check(re.search(r"-dev(\s|$)", fruns) is None and "swift build" not in fruns, "Dockerfile: no -dev packages or toolchain in the runtime stage")
    pk = gargs.get("RUNTIME_PACKAGES", "").split()
    check(len(pk) > 0 and all(re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", p) for p in pk), f"Dockerfile: RUNTIME_PACKAGES lists {len(pk)} Debian package names")
    users = [i["value"].strip() for i in final["ins"] if i["instruction"] == "USER"]
    u = users[-1].split(":")[0] if users else "root"
    check(bool(users) and u not in ("root", "0"), f"Dockerfile: runs as non-root USER ({users[-1] if users else 'none'})")
    hc = [i["value"] for i in final["ins"] if i["instruction"] == "HEALTHCHECK"]
    check(bool(hc) and "/healthz" in hc[-1] and not hc[-1].strip().upper().startswith("NONE"), "Dockerfile: HEALTHCHECK on /healthz")
    exposes = " ".join(i["value"] for i in final["ins"] if i["instruction"] == "EXPOSE").split()
    check("8080" in exposes or "8080/tcp" in exposes, "Dockerfile: EXPOSE 8080")
    envs = dfp.envs        # ENV of the final stage, as parsed
    check(envs.get("RELAY_LISTEN") == "0.0.0.0:8080", "Dockerfile: ENV RELAY_LISTEN=0.0.0.0:8080", str(envs.get("RELAY_LISTEN")))
    copies = [i["value"] for i in final["ins"] if i["instruction"] == "COPY"]
    check(any("--from=" in v and "stream-relay" in v for v in copies), "Dockerfile: runtime stage copies only the built binary from the build stage")
    check(any("--from=" in v and "/usr/lib/swift/linux" in v for v in copies), "Dockerfile: runtime stage copies the Swift runtime libraries")
    ep = [i["value"] for i in final["ins"] if i["instruction"] == "ENTRYPOINT"]
    check(bool(ep) and "stream-relay" in ep[-1], "Dockerfile: ENTRYPOINT is stream-relay")
    finish()


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"nginx-static": cmd_nginx_static, "nginx-smoke": cmd_nginx_smoke, "compose": cmd_compose,
     "k8s": cmd_k8s, "dockerfile": cmd_dockerfile, "runtime-packages": cmd_runtime_packages}[cmd](*args)


if __name__ == "__main__":
    main()
