"""Per key, the records that can still win, whatever the log start turns out to be.

Kafka's cleaner keeps one offset per key (its offset map) because the latest record always
wins and the log start only ever cuts whole prefixes. Under a strategy that ranks by timestamp
or by a header version, the record that wins depends on the log start: records below it are
gone, and the best of the rest may be an older-ranked but later one. A record can win for some
log start exactly when no later record of its key ranks higher. Those records, per key, are its
*front*: in offset order their ranks fall strictly, so it is a stack that a new (later) record
pops from the top while the top ranks no higher, then joins. Under the offset strategy the front
is the key's latest record; under the others, almost always one record too.

Reducing a segment to its fronts is therefore exact for any log start and any later merge: the
winner above a log start ``L`` among the front is the winner above ``L`` among all records.

``PyFront`` is the reference; the C twin in ``_cfront.c`` has the same interface and is held to
it by the tests. :func:`front` returns the C one when it was built. Arguments are buffers:
``key_offsets`` int32 (n + 1 entries, as Arrow's), ``key_data``, ``r1``/``r2``/``offsets``
int64 and ``candidate`` one byte per record (rows that are not candidates are skipped; their
keys are not read). Records must come in offset order.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from segcompact.format.columns import warn_pure

# A front entry: (r1, r2, offset, id); a record's rank is the first three.
_Entry = tuple[int, int, int, int]
# Any contiguous buffer (the C twin reads them without copying).
Bytes = bytes | memoryview | NDArray[Any]


class Front(Protocol):
    def add(
        self,
        key_offsets: Bytes,
        key_data: Bytes,
        r1: Bytes,
        r2: Bytes,
        offsets: Bytes,
        candidate: Bytes,
    ) -> bytes:
        """Add the records (the candidates join their fronts), which come after every record
        added before (offsets rise, else ValueError); one byte per record: 1 where a candidate
        is on its key's front after them. Records get ids in the order added, from 0."""
        ...

    def alive(self, ids: Bytes) -> bytes:
        """One byte per id (int64): 1 where that record, a candidate, is on its front now."""
        ...

    def peak_bytes(self, new_keys: int) -> int:
        """The most memory the fronts could hold while taking ``new_keys`` more keys (a
        growing table is, for a moment, beside the one it replaces)."""
        ...

    def __len__(self) -> int:
        """Records on a front."""
        ...

    @property
    def nbytes(self) -> int:
        """Memory the fronts hold, roughly (to bound it)."""
        ...


class PyFront:
    """The reference: a dict of stacks."""

    def __init__(self) -> None:
        self._stacks: dict[bytes, list[_Entry]] = {}
        self._dead: set[int] = set()
        self._ids = 0
        self._live = 0
        self._key_bytes = 0
        self._last: int | None = None

    def add(
        self,
        key_offsets: Bytes,
        key_data: Bytes,
        r1: Bytes,
        r2: Bytes,
        offsets: Bytes,
        candidate: Bytes,
    ) -> bytes:
        data, bounds = bytes(key_data), np.frombuffer(key_offsets, np.int32)
        ranks = np.frombuffer(r1, np.int64), np.frombuffer(r2, np.int64)
        at = np.frombuffer(offsets, np.int64)
        flags = np.frombuffer(candidate, np.uint8)
        before = [] if self._last is None else [self._last]
        steps = np.diff(np.concatenate([before, at]).astype(np.int64))
        if len(steps) and steps.min() <= 0:
            bad = int(np.argmax(steps <= 0)) + 1 - len(before)
            raise ValueError(f"record {bad}: offset {at[bad]} is not after the one before")
        base = self._ids
        alive = bytearray(flags.tobytes())
        for i in np.flatnonzero(flags):
            key = data[bounds[i] : bounds[i + 1]]
            stack = self._stacks.get(key)
            if stack is None:
                stack = self._stacks[key] = []
                self._key_bytes += len(key)
            rank = (int(ranks[0][i]), int(ranks[1][i]))
            while stack and stack[-1][:2] <= rank:
                popped = stack.pop()[3]
                self._dead.add(popped)
                self._live -= 1
                if popped >= base:
                    alive[popped - base] = 0
            stack.append((*rank, int(at[i]), base + int(i)))
            self._live += 1
        self._ids += len(at)
        if len(at):
            self._last = int(at[-1])
        return bytes(alive)

    def alive(self, ids: Bytes) -> bytes:
        out = bytearray()
        for i in np.frombuffer(ids, np.int64):
            if not 0 <= i < self._ids:
                raise ValueError(f"id {i}: only {self._ids} records were added")
            out.append(int(i) not in self._dead)
        return bytes(out)

    def peak_bytes(self, new_keys: int) -> int:
        return self.nbytes + (64 + 32) * new_keys

    def __len__(self) -> int:
        return self._live

    @property
    def nbytes(self) -> int:
        return self._key_bytes + 64 * len(self._stacks) + 32 * self._live + 8 * len(self._dead)


def front(pure: bool = False) -> Front:
    """The compiled front where it was built (and ``pure`` is false), else the Python one."""
    if not pure:
        try:
            from segcompact.compaction._cfront import CFront
        except ImportError:
            warn_pure()
        else:
            return CFront()  # type: ignore[no-any-return]
    return PyFront()
