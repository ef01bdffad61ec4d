"""requests-sse (PyPI): reads one answer as its README shows, with the bearer token in the
request headers. The library reconnects by itself after a broken or ended response, sending
`Last-Event-Id`; the driver closes the EventSource on `done` (docs/PROTOCOL.md §4.2).
The README's exceptions (InvalidStatusCodeError, InvalidContentTypeError,
requests.RequestException) end the read; a 204 is the relay's "the stream has ended", so
InvalidStatusCodeError with status 204 is a stop, not a failure.

    INTEROP_TOKEN=… python3 requests_sse_driver.py URL [LAST_EVENT_ID]
"""
import sys
import time

import requests
from requests_sse import EventSource, InvalidContentTypeError, InvalidStatusCodeError

from answer import Answer, args, linger_seconds, note

url, token = args()
latest = sys.argv[2] if len(sys.argv) > 2 else None  # an initial Last-Event-ID (`latest_event_id`)
answer = Answer()
failure = None
try:
    with EventSource(url, headers={"Authorization": f"Bearer {token}"}, timeout=30,
                     latest_event_id=latest) as event_source:
        for event in event_source:
            if answer.feed(event.data, event.last_event_id):
                event_source.close()
                break
        time.sleep(linger_seconds())  # the client object stays alive: a background reconnect would show
except InvalidStatusCodeError as e:
    note(f"stopped: InvalidStatusCodeError {e.status_code}")
    if e.status_code != 204:
        failure = f"InvalidStatusCodeError: {e}"
except InvalidContentTypeError as e:
    failure = f"InvalidContentTypeError: {e}"
except requests.RequestException as e:
    failure = f"{type(e).__name__}: {e}"
if failure:
    note(failure)
answer.report(client_error=failure)
