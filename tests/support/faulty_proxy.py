"""An HTTP proxy on 127.0.0.1 in front of a real server (MinIO) that fails chosen requests once,
as a store or a network does: a request the rule picks has its body read whole, then gets an
S3 ``503 SlowDown``, or has its connection dropped halfway through its body, or is done
upstream but its answer lost (the connection dropped instead). Every other request,
and the same one again, goes through unchanged (the Host header too, so that S3 signatures still
verify). What it saw is in :attr:`FaultyProxy.seen`: per request, its method, path with query,
body length and what was done."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

from tests.support.ports import HOST

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}
SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


@dataclass(frozen=True)
class Seen:
    method: str
    target: str  # the path and query
    body_bytes: int
    done: str  # "passed", "503", "dropped" or "lose" (passed, its answer lost)


class FaultyProxy:
    """Forwards to ``upstream`` (``http://host:port``). ``fault(method, target)`` says what to do
    to a request: None (pass it), ``"503"``, ``"drop"`` or ``"lose"``; each fault is done once per
    (method, target), the retry passes."""

    def __init__(self, upstream: str, fault: Callable[[str, str], str | None]) -> None:
        self.seen: list[Seen] = []
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or HOST, parts.port or 80)
        self._fault = fault
        self._faulted: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((HOST, 0), self._handler())
        self._server.daemon_threads = True
        self.endpoint = f"http://{HOST}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _decide(self, method: str, target: str) -> str | None:
        with self._lock:
            what = self._fault(method, target)
            if what is None or (method, target) in self._faulted:
                return None
            self._faulted.add((method, target))
            return what

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, and Expect: 100-continue answered

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                what = proxy._decide(self.command, self.path)
                if what == "drop":
                    self.rfile.read(length // 2)
                    proxy._record(Seen(self.command, self.path, length // 2, "dropped"))
                    self.close_connection = True
                    self.connection.shutdown(2)  # mid-body: the client's send fails
                    return
                body = self.rfile.read(length)
                if what == "503":
                    proxy._record(Seen(self.command, self.path, len(body), "503"))
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(SLOW_DOWN)
                    return
                proxy._record(Seen(self.command, self.path, len(body), what or "passed"))
                upstream = http.client.HTTPConnection(*proxy._upstream, timeout=60)
                try:
                    headers = {
                        k: v
                        for k, v in self.headers.items()
                        if k.lower() not in HOP_BY_HOP and k.lower() != "expect"
                    }
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                    if what == "lose":  # done upstream; the answer never reaches the client
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    self.send_response(answer.status, answer.reason)
                    for k, v in answer.getheaders():
                        if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                            self.send_header(k, v)
                    length = answer.getheader("Content-Length") if self.command == "HEAD" else None
                    self.send_header("Content-Length", length or str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        return Handler
