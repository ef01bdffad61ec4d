"""httpx-sse (PyPI): reads one answer with `connect_sse(client, "GET", url, headers=…)` and
`iter_sse()` as its README shows, the bearer token in the headers.

httpx-sse has no reconnection built in; its README ("Handling reconnections") reconnects with
`Last-Event-ID` = the last `sse.id` after the reconnection delay `sse.retry` when the connection
breaks. This driver does that (the README wraps it in `stamina`'s retry; here a bounded loop):
a broken connection (`httpx.TransportError`: the README's `ReadError`, and the
`RemoteProtocolError` httpx raises for a chunked body cut short) or a response that ends
before `done` is followed by a reconnect; a non-200 answer stops it (a 204 is the relay's
"the stream has ended", WHATWG HTML §9.2.3). On `done` it leaves the `connect_sse` block,
which closes the response.

    INTEROP_TOKEN=… python3 httpx_sse_driver.py URL [LAST_EVENT_ID]
"""
import sys
import time

import httpx
from httpx_sse import SSEError, connect_sse

from answer import Answer, args, linger_seconds, note

MAX_CONNECTIONS = 10

url, token = args()
answer = Answer()
last_event_id = sys.argv[2] if len(sys.argv) > 2 else ""
reconnection_delay = 0.0
failure = None
status = None
with httpx.Client(timeout=httpx.Timeout(60, connect=5)) as client:
    for connection in range(1, MAX_CONNECTIONS + 1):
        time.sleep(reconnection_delay)
        headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {token}"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        ended = False
        try:
            with connect_sse(client, "GET", url, headers=headers) as event_source:
                status = event_source.response.status_code
                for sse in event_source.iter_sse():
                    last_event_id = sse.id
                    if sse.retry is not None:
                        reconnection_delay = sse.retry / 1000
                    if answer.feed(sse.data, sse.id):
                        ended = True
                        break
                if not ended and status != 200:
                    if status != 204:
                        failure = f"HTTP {status}"
                    break
        except SSEError as e:
            failure = f"SSEError (HTTP {status}): {e}"
            break
        except httpx.TransportError as e:
            note(f"connection {connection}: {type(e).__name__}: {e}")
        if ended:
            break
        note(f"connection {connection} ended before done; reconnecting with Last-Event-ID {last_event_id}")
    else:
        failure = f"no done after {MAX_CONNECTIONS} connections"
    if failure:
        note(failure)
    time.sleep(linger_seconds())
answer.report(client_error=failure, connections=connection, last_status=status)
