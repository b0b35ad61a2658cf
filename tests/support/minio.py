"""A real S3 server (MinIO) on 127.0.0.1 for tests, with a temporary data directory.

``make minio`` builds the server once from the Go module proxy into ``.tools/bin/minio``
(``$SEGCOMPACT_MINIO`` names another binary). It listens on a port picked at start; its output
goes to ``<directory>/minio.log``, whose tail is in the error when it fails to start.

    with MinioServer(tmp_path) as s3:
        s3.make_bucket("segments")
        config [spark] settings: s3.spark_settings()
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.ports import HOST, free_port

USER = "segcompact-test"
PASSWORD = "segcompact-test-secret"
_BINARY = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "minio"
_START_TIMEOUT_S = 120  # a bound on a server that does not come up, not a pass condition


def minio_binary() -> Path:
    path = Path(os.environ.get("SEGCOMPACT_MINIO") or _BINARY)
    if not path.is_file():
        raise FileNotFoundError(f"MinIO server not found at {path}: run `make minio`")
    return path


class MinioServer:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.endpoint = f"http://{HOST}:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> MinioServer:
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "minio.log").open("wb")
        env = {
            **os.environ,
            "MINIO_ROOT_USER": USER,
            "MINIO_ROOT_PASSWORD": PASSWORD,
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
            "MINIO_CI_CD": "1",
        }
        self._process = subprocess.Popen(
            [
                str(minio_binary()),
                "server",
                "--quiet",
                "--address",
                f"{HOST}:{self.port}",
                "--console-address",
                f"{HOST}:{free_port()}",
                str(data),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.endpoint}/minio/health/ready", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)  # polling for readiness; no result depends on this
        self.stop()
        tail = (self.directory / "minio.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"MinIO did not start on {self.endpoint}:\n{tail}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> MinioServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def spark_settings(self) -> dict[str, str]:
        """The ``[spark]`` settings that reach this server through S3A (and segcompact's
        Python side)."""
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.access.key": USER,
            "spark.hadoop.fs.s3a.secret.key": PASSWORD,
            "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        }

    def client(self) -> Any:
        """An s3fs file system on this server, for a test's own reads and writes."""
        import s3fs

        return s3fs.S3FileSystem(
            key=USER,
            secret=PASSWORD,
            endpoint_url=self.endpoint,
            use_listings_cache=False,
            skip_instance_cache=True,
            client_kwargs={"region_name": "us-east-1"},
            config_kwargs={"s3": {"addressing_style": "path"}},
        )

    def make_bucket(self, name: str) -> str:
        self.client().mkdir(name)
        return name
