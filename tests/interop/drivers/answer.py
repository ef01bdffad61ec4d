"""What every Python driver shares: the answer being read and the driver's report.

Not an SSE parser: each client library parses the stream; a driver hands this module the
`data` of every message the library delivers (the relay's event JSON, docs/PROTOCOL.md §5)
and the message's id. The driver prints JSON lines on stdout for tests/interop/run.py:

    {"ready": true}           once the library is imported (then it waits for a line on stdin)
    {"progress": "<id>"}      once, after the first delta (the runner stops a relay after it)
    {"result": {...}}         once, at the end: text, done event, last id, error
"""
import json
import os
import sys


class Answer:
    """The text of one answer, built from the events a client library delivered."""

    def __init__(self):
        self.text = ""
        self.done = None
        self.error = None
        self.last_id = None
        self.messages = 0
        self._progress = False

    def feed(self, data, event_id=None):
        """One message's `data` (a str) and `id`; returns True once the answer has ended
        (`done` or an `error` event), when the driver closes its client as PROTOCOL.md §4.2
        says. A message that is not one event JSON object ends the answer as a failure."""
        self.messages += 1
        if event_id:
            self.last_id = event_id
        try:
            event = json.loads(data)
            kind = event["type"]
        except (ValueError, TypeError, KeyError) as e:
            self.error = f"message {self.messages} (id {event_id!r}) is not an event: data={data!r} ({e})"
            return True
        return self.feed_event(event)

    def feed_event(self, event):
        """One event already decoded (clients that decode JSON themselves)."""
        kind = event.get("type")
        if kind == "delta":
            self.text += event["content"]
            if not self._progress:
                self._progress = True
                emit({"progress": self.last_id})
            return False
        if kind == "done":
            self.done = event
            return True
        if kind == "error":
            self.error = f"error event: {json.dumps(event)}"
            return True
        self.error = f"unknown event type: {json.dumps(event)}"
        return True

    def report(self, **extra):
        emit({"result": dict(text=self.text, done=self.done, error=self.error, last_id=self.last_id, **extra)})


def emit(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def args():
    """(url, token): the stream URL is argv[1]; the bearer token is INTEROP_TOKEN.
    Called once the client library is imported: prints {"ready": true} and waits for one line
    on stdin, so the runner starts every answer and every client together, import time apart."""
    emit({"ready": True})
    sys.stdin.readline()
    return sys.argv[1], os.environ["INTEROP_TOKEN"]


def note(msg):
    """A line for the driver's log (stderr), shown by the runner when the case fails."""
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def linger_seconds():
    """How long a driver stays alive after closing its client (INTEROP_LINGER, default 2.5 s,
    above the relay's `retry: 1000`): a client that reconnects in the background after
    `close()` shows up in the nginx log within it."""
    return float(os.environ.get("INTEROP_LINGER", "2.5"))
