"""The Durable Streams Python client (PyPI `durable-streams`): reads one answer through the
relay's offset read mode (GET …/stream/{id}?offset=-1&live=long-poll, then the
`Stream-Next-Offset` it is given), as its README shows: `stream(url, offset=…, live=…,
headers={"Authorization": …}, on_error=…)` and `iter_json()`, which yields the event objects
of each JSON array.

Reconnects: a failed request goes through `on_error` (the README's "Error Recovery"); for
a network error or a 503 it waits 0.5 s and returns `{}` so the client repeats the request
from its current offset (at most MAX_RETRIES times). On `done` the driver stops iterating and
the `with` block closes the response.

    INTEROP_TOKEN=… python3 durable_streams_driver.py URL
"""
import time

import httpx
from durable_streams import DurableStreamError, FetchError, stream

from answer import Answer, args, linger_seconds, note

MAX_RETRIES = 20

url, token = args()
answer = Answer()
failure = None
retries = 0


def on_error(error):
    global retries
    note(f"on_error: {type(error).__name__}: {error}")
    transient = isinstance(error, (FetchError, httpx.TransportError)) or getattr(error, "status", None) == 503
    if transient and retries < MAX_RETRIES:
        retries += 1
        time.sleep(0.5)
        return {}
    return None


try:
    with stream(url, offset="-1", live="long-poll", headers={"Authorization": f"Bearer {token}"},
                on_error=on_error, timeout=60) as res:
        for item in res.iter_json():
            if answer.feed_event(item):
                break
except (DurableStreamError, FetchError, httpx.HTTPError, ValueError) as e:
    failure = f"{type(e).__module__}.{type(e).__name__}: {e}"
if failure:
    note(failure)
time.sleep(linger_seconds())
answer.report(client_error=failure, retries=retries)
