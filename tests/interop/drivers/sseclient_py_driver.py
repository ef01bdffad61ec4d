"""sseclient-py (PyPI `sseclient-py`, module `sseclient`): reads one answer as its README
shows (`requests.get(url, stream=True)` wrapped in `sseclient.SSEClient(res).events()`), with
the bearer token in the request headers.

The library does not reconnect, so this driver does what an EventSource does (WHATWG HTML
§9.2.3) with what the library exposes: after a response that ends or breaks before `done`, it
waits the reconnection time (the last `retry` the library reported, else 1 s) and sends the
same GET with `Last-Event-ID` = the last event id seen; a non-200 answer stops it (a 204
is the relay's "the stream has ended"). On `done` it closes the client (`SSEClient.close()`).

    INTEROP_TOKEN=… python3 sseclient_py_driver.py URL [LAST_EVENT_ID]
"""
import sys
import time

import requests
import sseclient

from answer import Answer, args, linger_seconds, note

MAX_CONNECTIONS = 10  # an answer that needs more is a failure, not a reason to loop on

url, token = args()
answer = Answer()
answer.last_id = sys.argv[2] if len(sys.argv) > 2 else None
delay_s = 1.0
failure = None
status = None
session = requests.Session()
for connection in range(1, MAX_CONNECTIONS + 1):
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {token}"}
    if answer.last_id:
        headers["Last-Event-ID"] = answer.last_id
    ended = False
    try:
        res = session.get(url, stream=True, headers=headers, timeout=(5, 60))
        status = res.status_code
        if res.status_code != 200:
            res.close()
            if res.status_code != 204:
                failure = f"HTTP {res.status_code}"
            break
        client = sseclient.SSEClient(res)
        for event in client.events():
            # sseclient-py keeps a field's text as sent: `retry` is a str (WHATWG: ASCII digits
            # only, else ignored).
            if event.retry and str(event.retry).isdigit():
                delay_s = int(event.retry) / 1000
            if answer.feed(event.data, event.id):
                client.close()
                ended = True
                break
    except requests.RequestException as e:
        note(f"connection {connection}: {type(e).__name__}: {e}")
    if ended:
        break
    note(f"connection {connection} ended before done; reconnecting after {delay_s} s with Last-Event-ID {answer.last_id}")
    time.sleep(delay_s)
else:
    failure = f"no done after {MAX_CONNECTIONS} connections"
if failure:
    note(failure)
time.sleep(linger_seconds())
answer.report(client_error=failure, connections=connection, last_status=status)
