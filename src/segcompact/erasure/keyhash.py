"""How the ledger names a key without holding it: HMAC-SHA-256 under a secret.

A plain SHA-256 of a user id or an e-mail address is reversed by hashing every candidate; an
HMAC is not without the secret. The secret comes from ``SEGCOMPACT_LEDGER_SECRET`` (on
Databricks, put a secret scope's value there in the job's environment) or, when that is not
set, from the file that ``[state] ledger_secret_file`` names. Destroying the secret shreds the
ledger: its hashes can no longer be matched to any key.

The file is read as ssh reads a private key: it is refused when its group or other users may
read or write it (``chmod 600`` it). Its bytes are the secret, less trailing line ends, so a
file written by ``echo "$SEGCOMPACT_LEDGER_SECRET" >`` holds the same secret as the variable.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING

from segcompact.config.sla import smallest_sla_ms
from segcompact.errors import ConfigError

if TYPE_CHECKING:
    from segcompact.config import CompactorConfig

SECRET_VARIABLE = "SEGCOMPACT_LEDGER_SECRET"
SECRET_FILE_KEY = "[state] ledger_secret_file"
MIN_SECRET_BYTES = 16  # shorter secrets are guessable, which would make the hashes reversible


def ledger_secret(
    secret_file: str | None = None, environ: Mapping[str, str] | None = None
) -> bytes:
    """The ledger's secret: ``SEGCOMPACT_LEDGER_SECRET`` when set, else ``secret_file``'s
    contents; a clear error when neither gives one of at least 16 bytes."""
    value = (os.environ if environ is None else environ).get(SECRET_VARIABLE, "")
    if value:
        return _checked(value.encode(), SECRET_VARIABLE)
    if secret_file is not None:
        return _checked(_read_secret_file(secret_file), f"{SECRET_FILE_KEY} = {secret_file!r}")
    raise ConfigError(
        f"{SECRET_VARIABLE} is not set and the config has no {SECRET_FILE_KEY}: a topic has "
        "gdpr.deletion.sla.ms, and the deletion ledger names keys by an HMAC under this secret "
        f"(give a random string of at least {MIN_SECRET_BYTES} bytes in one of them, and keep "
        "it: without it the ledger cannot be matched to keys)"
    )


def job_secret(config: CompactorConfig, *, always: bool = False) -> bytes | None:
    """The secret ``config``'s job hashes keys under: checked (:func:`ledger_secret`) when a
    topic has a deletion SLA, or ``always`` (to hash a key asked about); else None. The one
    place this precondition is checked: by the commands before Spark starts, and by the job."""
    if not always and smallest_sla_ms(config) is None:
        return None
    return ledger_secret(config.state.ledger_secret_file)


def _checked(secret: bytes, where: str) -> bytes:
    if len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"{where} has {len(secret)} bytes: expected at least {MIN_SECRET_BYTES} "
            "(a short secret lets the key hashes be reversed by guessing)"
        )
    return secret


def _read_secret_file(path: str) -> bytes:
    where = f"{SECRET_FILE_KEY} = {path!r}"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a folder, or a FIFO that would block
            raise ConfigError(f"{where}: not a regular file")
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if mode & 0o077:
                raise ConfigError(
                    f"{where}: mode {stat.S_IMODE(mode):04o} lets other users read or change "
                    "the secret; refused, as ssh refuses such a private key (chmod 600 it)"
                )
            return f.read().rstrip(b"\r\n")
    except OSError as e:
        raise ConfigError(f"{where}: cannot read: {e.strerror or e}") from None


def write_secret_file(path: str) -> bool:
    """A new random secret in ``path`` (mode 0600, its folder made) unless the file exists;
    whether one was written. For the demo: a real deployment keeps its secret in its vault."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(32) + "\n")
    return True


def key_hash(secret: bytes, topic: str, partition: int, key: bytes) -> str:
    """The hex HMAC-SHA-256 of (topic, partition, key), each field length-prefixed so that no
    two different triples share a message."""
    name = topic.encode()
    message = struct.pack(">H", len(name)) + name + struct.pack(">i", partition) + key
    return hmac.new(secret, message, hashlib.sha256).hexdigest()
