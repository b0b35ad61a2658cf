"""Compression codecs as Kafka frames them, behind one :class:`Codec` protocol and a registry.

- gzip: a gzip member (RFC 1952).
- snappy: xerial's framing (``\\x82SNAPPY\\x00``, version, compatible version, then blocks of
  i32 length + raw snappy). Input without the header is read as one raw block, as xerial does.
- lz4: the LZ4 frame format with 64 KiB independent blocks and no checksums, as
  ``KafkaLZ4BlockOutputStream`` writes it. Magic-0 messages carry a header checksum computed
  over the magic bytes too (KAFKA-3160); :func:`fix_legacy_lz4_header` repairs it.
- zstd: a zstd frame.

Every ``decompress`` takes a ``limit`` and raises rather than produce more: a batch's claimed
or actual size never drives an unbounded allocation (decompression bombs).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Protocol, cast

import cramjam
import lz4.frame
import xxhash
import zstandard

from segcompact.errors import CorruptBatchError
from segcompact.format.attributes import Compression

_CHUNK = 1 << 16


class Codec(Protocol):
    compression: Compression

    def compress(self, data: bytes) -> bytes: ...

    def decompress(self, data: bytes | memoryview, limit: int) -> bytes:
        """The decompressed bytes; :class:`CorruptBatchError` if corrupt or over ``limit``."""
        ...


def _too_big(name: str, limit: int) -> CorruptBatchError:
    return CorruptBatchError(
        f"{name} data decompresses to more than {limit} bytes (limit; a decompression bomb?)"
    )


_GZIP = 16 + zlib.MAX_WBITS
# A gzip member whose trailer claims more than this is inflated twice: once in steps to count
# its bytes (within the limit), then into one buffer of that size. zlib's own growing buffer
# would hold the output twice at its end (a batch of millions of tiny records: 82 MiB took
# 192); the second inflate costs less than decoding the records.
_GZIP_LARGE = 8 << 20


class GzipCodec:
    compression = Compression.GZIP

    def compress(self, data: bytes) -> bytes:
        c = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
        return c.compress(data) + c.flush()

    def decompress(self, data: bytes | memoryview, limit: int) -> bytes:
        claimed = int.from_bytes(bytes(data[-4:]), "little")  # ISIZE: the size mod 2^32
        if len(data) < 18 or claimed <= _GZIP_LARGE:
            return self._grow(data, limit)
        size = self._count(data, limit)
        try:
            return zlib.decompress(data, _GZIP, size)
        except zlib.error as e:  # not after the count; kept for the record
            raise CorruptBatchError(f"gzip data is corrupt: {e}") from None

    @staticmethod
    def _grow(data: bytes | memoryview, limit: int) -> bytes:
        d = zlib.decompressobj(_GZIP)
        try:
            out = d.decompress(data, limit + 1)
        except zlib.error as e:
            raise CorruptBatchError(f"gzip data is corrupt: {e}") from None
        if len(out) > limit:
            raise _too_big("gzip", limit)
        if not d.eof:
            raise CorruptBatchError("gzip data is truncated")
        return out

    @staticmethod
    def _count(data: bytes | memoryview, limit: int) -> int:
        """The bytes the member inflates to, in steps; raising as :meth:`_grow` does."""
        d = zlib.decompressobj(_GZIP)
        total = 0
        try:
            total += len(d.decompress(data, _CHUNK))
            while not d.eof and d.unconsumed_tail and total <= limit:
                total += len(d.decompress(d.unconsumed_tail, _CHUNK))
            while not d.eof and total <= limit:  # input consumed; output may remain
                more = d.decompress(b"", _CHUNK)
                if not more:
                    break
                total += len(more)
        except zlib.error as e:
            raise CorruptBatchError(f"gzip data is corrupt: {e}") from None
        if total > limit:
            raise _too_big("gzip", limit)
        if not d.eof:
            raise CorruptBatchError("gzip data is truncated")
        return total


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024  # xerial SnappyOutputStream's default block size


class SnappyCodec:
    compression = Compression.SNAPPY

    def compress(self, data: bytes) -> bytes:
        out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
        view = memoryview(data)
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
            out += struct.pack(">i", len(block))
            out += block
        return bytes(out)

    def decompress(self, data: bytes | memoryview, limit: int) -> bytes:
        view = memoryview(data)
        if bytes(view[:8]) != _XERIAL_MAGIC:
            return self._raw(view, limit)
        pos, end = _XERIAL_HEADER.size, len(view)
        out = bytearray()
        while pos < end:
            if pos + 4 > end:
                raise CorruptBatchError("snappy (xerial) block length runs past the data")
            (n,) = struct.unpack_from(">i", view, pos)
            pos += 4
            if n < 0 or pos + n > end:
                raise CorruptBatchError(
                    f"snappy (xerial) block of {n} bytes runs past the data ({end - pos} left)"
                )
            out += self._raw(view[pos : pos + n], limit - len(out))
            pos += n
        return bytes(out)

    @staticmethod
    def _raw(block: memoryview, limit: int) -> bytes:
        # A raw snappy block opens with its uncompressed length as an unsigned varint.
        claimed, shift = 0, 0
        for i in range(min(5, len(block))):
            claimed |= (block[i] & 0x7F) << shift
            shift += 7
            if not block[i] & 0x80:
                break
        if claimed > limit:
            raise _too_big("snappy", limit)
        try:
            return bytes(cramjam.snappy.decompress_raw(block))
        except cramjam.DecompressionError as e:
            raise CorruptBatchError(f"snappy data is corrupt: {e}") from None


class Lz4Codec:
    compression = Compression.LZ4

    def compress(self, data: bytes) -> bytes:
        return cast(
            bytes,
            lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            ),
        )

    def decompress(self, data: bytes | memoryview, limit: int) -> bytes:
        # python-lz4 sizes its output buffer from max_length: ask for a likely size first
        # (a large limit would cost a huge allocation per batch), then continue in steps.
        d = lz4.frame.LZ4FrameDecompressor()
        step = min(max(4 * len(data), _CHUNK), limit + 1)
        try:
            parts = [d.decompress(data, max_length=step)]
            total = len(parts[0])
            while not d.eof and total <= limit:
                if d.needs_input:
                    raise CorruptBatchError("lz4 frame is truncated")
                more = d.decompress(b"", max_length=min(step, limit + 1 - total))
                parts.append(more)
                total += len(more)
        except RuntimeError as e:
            raise CorruptBatchError(f"lz4 data is corrupt: {e}") from None
        if total > limit:
            raise _too_big("lz4", limit)
        return cast(bytes, parts[0] if len(parts) == 1 else b"".join(parts))


class ZstdCodec:
    compression = Compression.ZSTD
    _compressor = zstandard.ZstdCompressor(level=3)
    _decompressor = zstandard.ZstdDecompressor()

    def compress(self, data: bytes) -> bytes:
        return self._compressor.compress(data)

    def decompress(self, data: bytes | memoryview, limit: int) -> bytes:
        try:
            claimed = zstandard.frame_content_size(data)
            if claimed > limit:
                raise _too_big("zstd", limit)
            if claimed >= 0:
                return self._decompressor.decompress(data)
            # No size in the frame header (Kafka's zstd-jni stream writes none): counted in
            # steps (within the limit), then inflated into a buffer of that size; gathering the
            # steps would hold the output twice at the end (a batch of millions of tiny records).
            size = sum(len(chunk) for chunk in self._chunks(data, limit))
            if size:
                out = self._decompressor.decompress(data, max_output_size=size)
                if len(out) == size:
                    return out
            return b"".join(self._chunks(data, limit))  # several frames: decompress reads one
        except zstandard.ZstdError as e:
            raise CorruptBatchError(f"zstd data is corrupt: {e}") from None

    def _chunks(self, data: bytes | memoryview, limit: int) -> Iterator[bytes]:
        reader = self._decompressor.stream_reader(data, read_across_frames=True)
        total = 0
        while chunk := reader.read(_CHUNK):
            total += len(chunk)
            if total > limit:
                raise _too_big("zstd", limit)
            yield chunk


CODECS: dict[Compression, Codec] = {
    c.compression: c for c in (GzipCodec(), SnappyCodec(), Lz4Codec(), ZstdCodec())
}


def codec_for(compression: Compression | int) -> Codec:
    """The codec for a compression id; :class:`CorruptBatchError` for an unknown id."""
    try:
        return CODECS[Compression(compression)]
    except (ValueError, KeyError):
        raise CorruptBatchError(f"unknown compression codec id {int(compression)}") from None


def lz4_header_checksum(descriptor: bytes) -> int:
    """The frame header checksum byte over FLG..(content size) as the LZ4 spec defines it."""
    return (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF


def fix_legacy_lz4_header(data: bytes) -> bytes:
    """Rewrite the header checksum that Kafka's magic-0 producers computed over the magic too."""
    if len(data) < 7:
        raise CorruptBatchError("lz4 frame header is truncated")
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0)  # FLG, BD, optional content size
    if len(data) <= end:
        raise CorruptBatchError("lz4 frame header is truncated")
    return data[:end] + bytes([lz4_header_checksum(data[4:end])]) + data[end + 1 :]
