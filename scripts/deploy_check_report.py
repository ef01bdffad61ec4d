"""How the deployment checks (deploy_checks.py, deploy_nginx_smoke.py) report: one line per
check, exit status 1 when any failed; and the duration syntax the deployment files share."""
import re
import sys


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
