"""Loaded at start by every Python process of a run that ``tests.benchmarks.steps`` measures
(this directory is first on its PYTHONPATH): where ``SEGCOMPACT_STEPS_DIR`` is set, the thread
CPU seconds the process spends in the decoder (``decode_segment``: CRC, decompression, Arrow
columns) and in materialisation's segment encoder (``PartitionWriter.add`` and ``close``: the C
encoder and the segment files it writes), a line ``<step>\\t<seconds>`` per call of the decoder
and per partition written, appended to ``<dir>/<pid>.tsv``. Nothing of segcompact is changed
but these two names, wrapped before segcompact's modules import them."""

from __future__ import annotations

import os

_DIR = os.environ.get("SEGCOMPACT_STEPS_DIR")


def _note(step: str, seconds: float) -> None:
    with open(os.path.join(_DIR or ".", f"{os.getpid()}.tsv"), "a") as f:
        f.write(f"{step}\t{seconds:.6f}\n")


def _install() -> None:
    import functools
    import time
    from collections.abc import Iterator
    from typing import Any

    from segcompact.compaction import output
    from segcompact.format import arrow

    decode = arrow.decode_segment

    @functools.wraps(decode)
    def timed_decode(*args: Any, **kwargs: Any) -> Iterator[Any]:
        spent = 0.0
        chunks = decode(*args, **kwargs)
        try:
            while True:
                start = time.thread_time()
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                finally:
                    spent += time.thread_time() - start
                yield chunk
        finally:
            _note("decode", spent)

    arrow.decode_segment = timed_decode  # type: ignore[assignment]

    writer = output.PartitionWriter
    add, close = writer.add, writer.close
    spent: dict[int, float] = {}

    def timed_add(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return add(self, *args, **kwargs)
        finally:
            spent[id(self)] = spent.get(id(self), 0.0) + time.thread_time() - start

    def timed_close(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return close(self, *args, **kwargs)
        finally:
            _note("encode", spent.pop(id(self), 0.0) + time.thread_time() - start)

    writer.add = timed_add  # type: ignore[method-assign]
    writer.close = timed_close  # type: ignore[method-assign]


if _DIR:
    _install()
