"""What the browser end-to-end tests share: a child's minimal environment, a free loopback
port, polls with a deadline, and plain HTTP GETs against the relays and nginx."""
import http.client
import os
import socket
import time


def minimal_env():
    """PATH, HOME, TMPDIR and LANG of this process only: the base of every child's environment."""
    return {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR", "LANG") if k in os.environ}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, predicate, timeout=30.0, interval=0.05):
    """Polls `predicate` until it returns a truthy value; fails with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def http_get(port, path, headers=None, timeout=5.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def serves(port, path):
    """Whether 127.0.0.1:`port` answers `GET path` with 200 within 1 s (a relay's /readyz, a
    page nginx serves); a refused or silent port is False."""
    try:
        return http_get(port, path, timeout=1)[0] == 200
    except OSError:
        return False
