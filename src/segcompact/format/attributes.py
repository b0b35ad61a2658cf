"""Batch attribute bits, compression codec ids and timestamp types of Kafka's log format."""

from __future__ import annotations

import enum


class Compression(enum.IntEnum):
    """The codec id in bits 0-2 of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """Kafka's name for the codec, as in ``compression.type``."""
        return self.name.lower()

    @classmethod
    def from_str(cls, name: str) -> Compression:
        try:
            return cls[name.upper()]
        except KeyError:
            allowed = ", ".join(c.label for c in cls)
            raise ValueError(f"unknown compression {name!r}; allowed: {allowed}") from None


class TimestampType(enum.IntEnum):
    """As Spark's Kafka source reports ``timestampType``."""

    NO_TIMESTAMP = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class BatchAttr(enum.IntFlag):
    """Masks over a v2 batch's 16-bit attributes."""

    COMPRESSION = 0x07
    LOG_APPEND_TIME = 0x08
    TRANSACTIONAL = 0x10
    CONTROL = 0x20
    DELETE_HORIZON = 0x40


class LegacyAttr(enum.IntFlag):
    """Masks over a v0/v1 message's 8-bit attributes."""

    COMPRESSION = 0x07
    LOG_APPEND_TIME = 0x08  # v1 only


class RecordAttr(enum.IntFlag):
    """Masks over a v2 record's attributes byte, unused by Kafka itself."""

    TOMBSTONE = 0x01  # KIP-87's explicit delete flag
