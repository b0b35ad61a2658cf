"""A part's body as botocore and aiohttp use it: read in chunks, rewound for a retry and read
whole again, its length the part's whatever has been read; closing it frees the part buffer."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from segcompact.storage.multipart import _Body


@given(st.binary(max_size=5000), st.lists(st.integers(1, 700), min_size=1, max_size=20))
def test_a_body_is_read_in_chunks_and_again_after_a_rewind(data: bytes, chunks: list[int]) -> None:
    part = bytearray(data + b"unsent tail")
    with _Body(memoryview(part)[: len(data)]) as body:
        assert len(body) == len(data) and body.seekable()
        for _ in range(2):  # an attempt, then botocore's retry after seek(0)
            read = []
            for size in chunks * (len(data) // sum(chunks) + 1):
                read.append(body.read(size))
            read.append(body.read())
            assert b"".join(read) == data and body.tell() == len(data)
            body.seek(0)
        into = bytearray(len(data) + 3)
        assert body.readinto(into) == len(data) and bytes(into[: len(data)]) == data
        assert body.seek(-1, io.SEEK_END) == max(0, len(data) - 1)
    part.extend(b"x")  # the buffer is no longer exported once the body is closed
