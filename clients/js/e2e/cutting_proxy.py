"""A loopback TCP proxy that cuts a chat stream mid-answer, or plays a relay that dies at once,
for the browser end-to-end test (test_chat_e2e.py)."""
import json
import socket
import threading


class CuttingProxy:
    """A loopback TCP proxy to one upstream. When armed, it cuts (closes both sides of) the
    next `POST /…/api/chat/stream` connection after `after_bytes` response bytes. While
    `dead`, every connection gets a 200 `text/event-stream` head and is then closed without
    a byte of body (a relay dying at once): the client sees a dropped stream, not an HTTP error."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.cut_after = None
        self.cuts = 0
        self.dead = False
        self.die_after_cut = False
        self.dead_answers = 0
        self.error_next = None
        self.closed = False
        self.sockets = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, after_bytes):
        with self.lock:
            self.cut_after = after_bytes

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.dead:
                threading.Thread(target=self._die, args=(client,), daemon=True).start()
                continue
            with self.lock:
                error, self.error_next = self.error_next, None
            if error is not None:
                threading.Thread(target=self._fail, args=(client, error), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.sockets.update((client, upstream))
            state = {"post_stream": False, "sent": 0}
            threading.Thread(target=self._pump, args=(client, upstream, state, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, state, False), daemon=True).start()

    @staticmethod
    def _read_head(client):
        """Reads the request head (up to its blank line, or the client's end), waiting 5 s at most per read."""
        client.settimeout(5)
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(65536)
            if not data:
                break
            head += data

    def _die(self, client):
        try:
            self._read_head(client)
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            with self.lock:
                self.dead_answers += 1
        except OSError:
            pass
        client.close()

    def fail_next(self, event):
        """The next connection gets a 200 `text/event-stream` whose only event is `event` (a
        relay's in-stream `error`, docs/PROTOCOL.md §5.4), then the end of the body."""
        with self.lock:
            self.error_next = event

    def _fail(self, client, event):
        try:
            self._read_head(client)
            body = f"id: 1\ndata: {json.dumps(event)}\n\n".encode()
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + str(len(body)).encode()
                           + b"\r\nConnection: close\r\n\r\n" + body)
        except OSError:
            pass
        client.close()

    def _pump(self, src, dst, state, request_side):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if request_side and state["sent"] == 0 and data.startswith(b"POST ") and b"/api/chat/stream " in data.split(b"\r\n", 1)[0]:
                    state["post_stream"] = True
                if not request_side:
                    state["sent"] += len(data)
                    with self.lock:
                        cut = state["post_stream"] and self.cut_after is not None and state["sent"] >= self.cut_after
                        if cut:
                            self.cut_after = None
                            self.cuts += 1
                            self.dead = self.die_after_cut
                    if cut:
                        break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.closed = True
        self.listener.close()
        with self.lock:
            for s in self.sockets:
                try:
                    s.close()
                except OSError:
                    pass
