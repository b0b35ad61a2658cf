"""How the ledger names a key without holding it: HMAC-SHA-256 under a secret.

A plain SHA-256 of a user id or an e-mail address is reversed by hashing every candidate; an
HMAC is not without the secret. The secret comes from ``SEGCOMPACT_LEDGER_SECRET`` (on
Databricks, put a secret scope's value there in the job's environment). Destroying the secret
shreds the ledger: its hashes can no longer be matched to any key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from collections.abc import Mapping

from segcompact.errors import ConfigError

SECRET_VARIABLE = "SEGCOMPACT_LEDGER_SECRET"
MIN_SECRET_BYTES = 16  # shorter secrets are guessable, which would make the hashes reversible


def ledger_secret(environ: Mapping[str, str] | None = None) -> bytes:
    """The ledger's secret from the environment; a clear error when it is missing or short."""
    value = (os.environ if environ is None else environ).get(SECRET_VARIABLE, "")
    if not value:
        raise ConfigError(
            f"{SECRET_VARIABLE} is not set: a topic has gdpr.deletion.sla.ms, and the deletion "
            "ledger names keys by an HMAC under this secret (set it to a random string of at "
            f"least {MIN_SECRET_BYTES} bytes, and keep it: without it the ledger cannot be "
            "matched to keys)"
        )
    secret = value.encode()
    if len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"{SECRET_VARIABLE} has {len(secret)} bytes: expected at least {MIN_SECRET_BYTES} "
            "(a short secret lets the key hashes be reversed by guessing)"
        )
    return secret


def key_hash(secret: bytes, topic: str, partition: int, key: bytes) -> str:
    """The hex HMAC-SHA-256 of (topic, partition, key), each field length-prefixed so that no
    two different triples share a message."""
    name = topic.encode()
    message = struct.pack(">H", len(name)) + name + struct.pack(">i", partition) + key
    return hmac.new(secret, message, hashlib.sha256).hexdigest()
