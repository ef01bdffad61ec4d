#!/usr/bin/env python3
"""A completion-webhook receiver for the relay's integration tests (CompletionWebhookTests).

Listens on 127.0.0.1:<port>, answers each POST as its --script says (in arrival order:
a status such as 500 or 410; "hang": no answer for --hang-seconds; "slow": 200 after
--slow-seconds; requests past the script are answered as --default says, 200 unless told),
and appends one JSON line per request to --log:

    {"n": 0, "action": "500", "id": "...", "timestamp": "...", "sig_ok": true, "body": "..."}

The signature is checked here, independently of the relay's code, as the Standard
Webhooks specification 1.0.0 says: HMAC-SHA256 keyed with the base64-decoded part of the
whsec_ secret over "<webhook-id>.<webhook-timestamp>.<body>", sent as "v1,<base64>" (one
of the space-separated signatures).
"""
import argparse
import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--script", default="")
    ap.add_argument("--hang-seconds", type=float, default=30)
    ap.add_argument("--slow-seconds", type=float, default=0.5)
    ap.add_argument("--default", default="200")
    args = ap.parse_args()
    key = base64.b64decode(args.secret[len("whsec_"):])
    script = [s for s in args.script.split(",") if s]
    lock = threading.Lock()
    state = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                n = state["n"]
                state["n"] += 1
            action = script[n] if n < len(script) else args.default
            wid = self.headers.get("webhook-id", "")
            ts = self.headers.get("webhook-timestamp", "")
            signed = wid.encode() + b"." + ts.encode() + b"." + body
            expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
            sigs = self.headers.get("webhook-signature", "").split(" ")
            record = {"n": n, "action": action, "id": wid, "timestamp": ts,
                      "sig_ok": any(hmac.compare_digest(s, expected) for s in sigs),
                      "content_type": self.headers.get("Content-Type", ""),
                      "body": body.decode("utf-8", "replace")}
            with lock:
                with open(args.log, "a") as f:
                    f.write(json.dumps(record) + "\n")
            if action == "hang":
                time.sleep(args.hang_seconds)
                return
            if action == "slow":
                time.sleep(args.slow_seconds)
            status = 200 if action == "slow" else int(action)
            reply = b"{}"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
