"""curl: reads one answer with `curl -sS -N` (no buffering) and the bearer token, as a shell
script would; curl is not an SSE client, so this driver reads its output as an event stream
(WHATWG HTML §9.2.6: lines, `id`, `data`, `retry`, blank line dispatches, `:` comments).

After `done` the relay ends the response and curl must exit 0 by itself.
When curl exits 0 before `done` (the response ended cleanly, e.g. a draining relay), the
driver runs curl again with `-H 'Last-Event-ID: <last id>'` after the reconnection delay.
A non-zero exit (18: the response was cut inside its chunked body; 56: a reset) fails the
case: a shell script under `set -e` stops there. A 204 ends it (the stream has ended).

    INTEROP_TOKEN=… python3 curl_driver.py URL [LAST_EVENT_ID]
"""
import subprocess
import sys
import time

from answer import Answer, args, linger_seconds, note

MAX_CONNECTIONS = 10

url, token = args()
answer = Answer()
answer.last_id = sys.argv[2] if len(sys.argv) > 2 else None
delay_s = 1.0
failure = None
status = None
for connection in range(1, MAX_CONNECTIONS + 1):
    cmd = ["curl", "-sS", "-N", "-H", f"Authorization: Bearer {token}", "-H", "Accept: text/event-stream",
           "-w", "\n%{http_code}\n", "--max-time", "120", url]
    if answer.last_id:
        cmd[5:5] = ["-H", f"Last-Event-ID: {answer.last_id}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    data, event_id, ended, lines = [], None, False, []
    for raw in proc.stdout:
        line = raw.decode("utf-8").rstrip("\n").rstrip("\r")
        lines.append(line)
        if line == "":
            if data:
                if event_id is not None:
                    answer.last_id = event_id
                if answer.feed("\n".join(data), answer.last_id):
                    ended = True
                    break
            data, event_id = [], None
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "id":
                event_id = value
            elif field == "retry" and value.isdigit():
                delay_s = int(value) / 1000
    try:
        rc = proc.wait(timeout=10)  # after done the relay ends the response: curl exits by itself
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        failure = "curl did not exit within 10 s after done"
        break
    err = proc.stderr.read().decode("utf-8", "replace").strip()
    if ended:
        if rc != 0:
            failure = f"curl exit {rc} after done: {err}"
        break
    status = lines[-1] if lines and lines[-1].isdigit() else None
    if rc != 0:
        failure = f"curl exit {rc}: {err}"
        break
    if status != "200":
        if status != "204":
            failure = f"HTTP {status}"
        break
    note(f"connection {connection}: curl exit 0 before done; again with Last-Event-ID {answer.last_id}")
    time.sleep(delay_s)
else:
    failure = f"no done after {MAX_CONNECTIONS} connections"
if failure:
    note(failure)
time.sleep(linger_seconds())
answer.report(client_error=failure, connections=connection, last_status=status)
