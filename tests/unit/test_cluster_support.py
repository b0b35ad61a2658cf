"""The test cluster's start: a master whose web server is still starting answers nothing
usable, and that reads as "no worker yet", never as an error that leaves its JVMs running."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.ports import HOST
from tests.support.spark_cluster import SparkCluster

# What a master's /json may answer while its web server and its election are under way.
ANSWERS = {
    "not JSON": (200, b"<html>starting</html>", None),
    "no workers yet": (200, b'{"status": "STANDBY"}', None),
    "cut short": (200, b'{"workers": [', 4096),  # a Content-Length the body never reaches
    "unavailable": (503, b"", None),
}


@pytest.fixture(params=sorted(ANSWERS))
def master_ui(request: pytest.FixtureRequest) -> Iterator[str]:
    status, body, length = ANSWERS[request.param]

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((HOST, 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_master_that_answers_nothing_usable_has_no_alive_worker(
    master_ui: str, tmp_path: Path
) -> None:
    cluster = SparkCluster(tmp_path)
    cluster.webui = master_ui
    assert cluster.alive_workers() == []


def test_a_start_that_fails_ends_the_jvms_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = SparkCluster(tmp_path, workers=1)
    started: list[str] = []
    monkeypatch.setattr(cluster, "_launch", lambda name, *args: started.append(name))

    def broken() -> list[object]:
        raise RuntimeError("the master's answer")

    monkeypatch.setattr(cluster, "alive_workers", broken)
    stopped: list[bool] = []
    monkeypatch.setattr(cluster, "stop", lambda: stopped.append(True))
    with pytest.raises(RuntimeError, match="the master's answer"):
        cluster.start()
    assert started == ["master", "worker-0"] and stopped == [True]
