"""The interoperability suite's child processes and waits (run.py): children die with the runner,
get a minimal environment (docs/TESTING.md: hermetic children), and every wait is a poll with a
deadline."""
import http.client
import os
import signal
import socket
import time


def die_with_parent():
    """preexec_fn of every child: the kernel kills it when this runner dies (prctl
    PR_SET_PDEATHSIG), so a runner stopped by CI's timeout leaves nothing running."""
    import ctypes
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def minimal_env(**extra):
    """PATH, HOME, TMPDIR and LANG of this process only (docs/TESTING.md: hermetic children)."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR", "LANG") if k in os.environ}
    env.update(extra)
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def http_status(port, path):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        c.request("GET", path)
        status = c.getresponse().status
        c.close()
        return status
    except OSError:
        return None
