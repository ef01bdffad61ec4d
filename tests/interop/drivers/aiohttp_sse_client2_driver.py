"""aiohttp-sse-client2 (PyPI): reads one answer as its README shows, with the bearer token in
the request headers. The library reconnects by itself (auto-reconnect, `Last-Event-Id`); the
driver stops iterating on `done` and the `async with` closes the EventSource
(docs/PROTOCOL.md §4.2). The README ends a read on `ConnectionError`; the library raises
`ConnectionAbortedError` for any status other than 200, so one for a 204 (the relay's "the
stream has ended") is a stop, not a failure. Anything else it raises
(`aiohttp.ClientPayloadError` for a response cut inside its chunked body …) is a failure.

    INTEROP_TOKEN=… python3 aiohttp_sse_client2_driver.py URL [LAST_EVENT_ID]
"""
import asyncio
import sys

from aiohttp_sse_client2 import client as sse_client

from answer import Answer, args, linger_seconds, note


async def main():
    url, token = args()
    headers = {"Authorization": f"Bearer {token}"}
    if len(sys.argv) > 2:
        headers["Last-Event-ID"] = sys.argv[2]
    answer = Answer()
    failure = None
    try:
        async with sse_client.EventSource(url, headers=headers) as event_source:
            async for event in event_source:
                if answer.feed(event.data, event.last_event_id):
                    break
    except ConnectionError as e:
        note(f"stopped: {type(e).__name__}: {e}")
        if not (isinstance(e, ConnectionAbortedError) and "status: 204" in str(e)):
            failure = f"{type(e).__name__}: {e}"
    except Exception as e:
        failure = f"{type(e).__module__}.{type(e).__name__}: {e}"
    if failure:
        note(failure)
    await asyncio.sleep(linger_seconds())  # the loop runs on: a background reconnect would show
    answer.report(client_error=failure)


asyncio.run(main())
