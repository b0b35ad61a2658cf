"""``segcompact ship`` to MinIO beside a plain copy of the same files through the same library.

    python -m tests.benchmarks.ship [--partitions 4] [--segments 2] [--segment-mib 64]
        [--idle-partitions 200] [--idle-polls 20] [--idle-s 60] [--json F]

A log dir of ``--partitions`` partitions, each with ``--segments`` rolled segments of about
``--segment-mib`` MiB (1 MiB batches of incompressible bytes) and an active one, is shipped
once by :class:`~segcompact.ship.shipper.Shipper` (every batch's CRC-32C checked on the bytes
sent, multipart uploads completed last, the manifest written) and copied once by s3fs's
``put_file`` (what ``aws s3 cp`` does: no check), as many files at once as the shipper's
``uploads``, each to its own fresh bucket on one MinIO server. Reported: MB/s of each, wall and
this process's CPU seconds (from /proc), and the ratio shipper/plain.

Then idle: a log dir of ``--idle-partitions`` partitions (two rolled segments of one small batch
each, and an active one) is shipped, and polled ``--idle-polls`` times more with nothing new:
the process's CPU per poll per partition, and what that makes at the default poll interval (the
share of a core for that many partitions, and the partitions 1 % of a core polls). Then the
whole command, ``segcompact ship`` polling that log dir every 10 s (the default) with its lease
renewed, is left idle for ``--idle-s`` seconds after a warm-up poll: its CPU from /proc, as a
share of a core (0: not run). Nothing here asserts a time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import segcompact
from segcompact.config.ship import parse_ship_config
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from segcompact.ship.shipper import Shipper
from segcompact.storage import Storage
from tests.benchmarks import options
from tests.support.minio import MinioServer

_BATCH = 1 << 20


def write_log(root: Path, partitions: int, segments: int, segment_mib: int) -> list[Path]:
    """The log dir; returns the rolled segments' files."""
    payload = os.urandom(_BATCH - 200)  # incompressible, as most values on the wire are
    rolled = []
    for p in range(partitions):
        directory = root / f"bench-{p}"
        offset = 0
        for s in range(segments + 1):
            count = segment_mib if s < segments else 1
            batches = [
                build_batch([Record(offset + i, i, b"k%d" % i, payload)]) for i in range(count)
            ]
            path = SampleSegment(offset, batches).write(directory)
            offset += count
            if s < segments:
                rolled.append(path)
    return rolled


def write_idle_log(root: Path, partitions: int) -> None:
    """A log dir of small partitions: two rolled segments of one batch each, and an active one."""
    for p in range(partitions):
        for base in (0, 1, 2):
            batch = build_batch([Record(base, base, b"k", b"v" * 100)])
            SampleSegment(base, [batch]).write(root / f"idle-{p}")


_WARM_UP_S = 15  # the command's first poll reads each partition's owner and manifest


def _cpu(pid: int | str = "self") -> float:
    """A process's CPU seconds, every thread's (utime + stime of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(run: Any) -> dict[str, float]:
    wall, cpu = time.perf_counter(), _cpu()
    run()
    return {"wall_s": time.perf_counter() - wall, "cpu_s": _cpu() - cpu}


def _shipper(server: MinioServer, log_dir: Path, uploads: int) -> Shipper:
    """A shipper of ``log_dir`` to a fresh bucket."""
    bucket = server.make_bucket(f"ship-{uuid.uuid4().hex[:8]}")
    config = parse_ship_config(
        {
            "ship": {
                "log_dirs": [str(log_dir)],
                "to": f"s3a://{bucket}/segments",
                "topics_regex": ".*",
                "uploads": uploads,
            },
            "spark": server.spark_settings(),
        },
        "bench-ship",
    )
    return Shipper(config)


def measure_idle(server: MinioServer, log_dir: Path, partitions: int, polls: int) -> dict[str, Any]:
    """CPU of polls with nothing to ship, a partition a poll."""
    shipper = _shipper(server, log_dir, uploads=4)
    first = shipper.poll()
    if (first.shipped, first.errors) != (2 * partitions, 0):
        raise AssertionError(f"the idle log was not shipped: {first.line()}")
    cpu = _cpu()
    for _ in range(polls):
        if shipper.poll().shipped:
            raise AssertionError("an idle poll shipped something")
    per_poll_s = (_cpu() - cpu) / polls
    interval_s = shipper.settings.poll_interval_ms / 1000  # the default: the bench sets none
    per_partition_ms = per_poll_s / partitions * 1000
    return {
        "partitions": partitions,
        "polls": polls,
        "cpu_ms_per_partition_poll": per_partition_ms,
        "poll_interval_s": interval_s,
        "core_percent": per_poll_s / interval_s * 100,
        "partitions_per_percent": (
            interval_s / 100 / (per_partition_ms / 1000) if per_partition_ms else None
        ),
    }


def measure_idle_command(server: MinioServer, log_dir: Path, work: Path, seconds: int) -> float:
    """The share of a core ``segcompact ship`` takes polling ``log_dir`` (shipped already to a
    fresh bucket here) for ``seconds`` after a warm-up."""
    shipped = _shipper(server, log_dir, uploads=4)
    if shipped.poll().errors:
        raise AssertionError("the idle log was not shipped")
    settings = "\n".join(f'"{k}" = "{v}"' for k, v in server.spark_settings().items())
    config = work / "ship-idle.toml"
    config.write_text(
        f'[ship]\nlog_dirs = ["{log_dir}"]\nto = "{shipped.settings.to}"\n'
        f'topics_regex = ".*"\n[spark]\n{settings}\n'
    )
    env = {**os.environ, "PYTHONPATH": str(Path(segcompact.__file__).parents[1])}
    command = [sys.executable, "-m", "segcompact.cli", "ship", "--config", str(config)]
    process = subprocess.Popen(command, cwd=work, env=env, stderr=subprocess.DEVNULL)
    try:
        time.sleep(_WARM_UP_S)
        if process.poll() is not None:
            raise AssertionError(f"segcompact ship exited with {process.returncode}")
        start = _cpu(process.pid)
        time.sleep(seconds)
        used = _cpu(process.pid) - start
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    return used / seconds * 100


def measure(server: MinioServer, log_dir: Path, rolled: list[Path], uploads: int) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in rolled)
    plain_bucket = server.make_bucket(f"plain-{uuid.uuid4().hex[:8]}")
    shipper = _shipper(server, log_dir, uploads)
    shipped: dict[str, Any] = {}

    def ship() -> None:
        shipped["result"] = shipper.poll()

    fs, _ = Storage.of(server.spark_settings()).resolve(f"s3a://{plain_bucket}/x")
    client = fs.fs  # the same s3fs file system the shipper uploads through

    def plain() -> None:
        def put(path: Path) -> None:
            client.put_file(str(path), f"{plain_bucket}/segments/{path.parent.name}/{path.name}")

        with ThreadPoolExecutor(uploads) as pool:
            list(pool.map(put, rolled))

    results: dict[str, Any] = {"bytes": size, "segments": len(rolled), "uploads": uploads}
    results["plain"] = _timed(plain)
    results["ship"] = _timed(ship)
    result = shipped["result"]
    if (result.shipped, result.bytes, result.errors) != (len(rolled), size, 0):
        raise AssertionError(f"the shipper did not ship every segment: {result.line()}")
    for way in ("plain", "ship"):
        results[way]["mb_per_s"] = size / 1e6 / results[way]["wall_s"]
    results["ratio"] = results["ship"]["mb_per_s"] / results["plain"]["mb_per_s"]
    return results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("ship", __doc__)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--segments", type=int, default=2, help="rolled segments a partition")
    parser.add_argument("--segment-mib", type=int, default=64)
    parser.add_argument("--uploads", type=int, default=4)
    parser.add_argument("--idle-partitions", type=int, default=200)
    parser.add_argument("--idle-polls", type=int, default=20)
    parser.add_argument("--idle-s", type=int, default=60, help="the idle command; 0: not run")
    options.add_workdir(parser, "bench-ship", "the log dir and MinIO's data")
    args = parser.parse_args(argv)
    work: Path = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    log_dir = work / f"kafka-{uuid.uuid4().hex[:8]}"
    rolled = write_log(log_dir, args.partitions, args.segments, args.segment_mib)
    idle_dir = work / f"kafka-idle-{uuid.uuid4().hex[:8]}"
    write_idle_log(idle_dir, args.idle_partitions)
    with MinioServer(work / f"minio-{uuid.uuid4().hex[:8]}") as server:
        results = measure(server, log_dir, rolled, args.uploads)
        results["idle"] = measure_idle(server, idle_dir, args.idle_partitions, args.idle_polls)
        if args.idle_s:
            results["idle"]["command_core_percent"] = measure_idle_command(
                server, idle_dir, work, args.idle_s
            )
    print(
        f"{results['bytes'] / 1e6:.0f} MB in {results['segments']} segments, "
        f"{results['uploads']} at once: ship {results['ship']['mb_per_s']:.0f} MB/s "
        f"({results['ship']['cpu_s']:.1f} s CPU), plain copy {results['plain']['mb_per_s']:.0f} "
        f"MB/s ({results['plain']['cpu_s']:.1f} s CPU); ship/plain {results['ratio']:.2f}"
    )
    idle = results["idle"]
    print(
        f"idle: {idle['cpu_ms_per_partition_poll']:.3f} ms CPU a partition a poll "
        f"({idle['partitions']} partitions, {idle['polls']} polls); at a poll every "
        f"{idle['poll_interval_s']:g} s: {idle['core_percent']:.3f} % of a core, 1 % of a core "
        f"for {idle['partitions_per_percent'] or float('inf'):.0f} partitions"
    )
    if "command_core_percent" in idle:
        print(
            f"idle command: {idle['command_core_percent']:.3f} % of a core over {args.idle_s} s "
            f"({idle['partitions']} partitions, a poll every {idle['poll_interval_s']:g} s)"
        )
    options.write_json(args, results)
    return results


if __name__ == "__main__":
    main()
