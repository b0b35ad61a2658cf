"""The ledger's secret from ``[state] ledger_secret_file``: read as ssh reads a private key,
the environment variable first, and the demo's own written once, 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.erasure.keyhash import SECRET_VARIABLE, ledger_secret, write_secret_file
from segcompact.errors import ConfigError

SECRET = "a secret of enough bytes"


def _secret_file(tmp_path: Path, text: str = SECRET + "\n", mode: int = 0o600) -> str:
    path = tmp_path / "ledger.secret"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def test_the_file_is_read_when_the_variable_is_not_set(tmp_path: Path) -> None:
    path = _secret_file(tmp_path)
    from_file = ledger_secret(path, environ={})
    # `echo "$SEGCOMPACT_LEDGER_SECRET" > file` and the variable: one secret.
    assert from_file == ledger_secret(environ={SECRET_VARIABLE: SECRET}) == SECRET.encode()


def test_the_variable_wins_over_the_file(tmp_path: Path) -> None:
    path = _secret_file(tmp_path)
    other = "another secret, from the environment"
    assert ledger_secret(path, environ={SECRET_VARIABLE: other}) == other.encode()
    # Even over a file that would be refused: the file is not read at all.
    assert ledger_secret(str(tmp_path / "missing"), environ={SECRET_VARIABLE: other})


@pytest.mark.parametrize(
    ("setup", "problem"),
    [
        ("missing", "cannot read: No such file or directory"),
        ("directory", "not a regular file"),
        ("short", "has 5 bytes: expected at least 16"),  # line ends are not the secret
        ("empty", "has 0 bytes: expected at least 16"),
        ("world-readable", "mode 0644 lets other users read or change the secret; refused"),
        ("group-readable", "mode 0640 lets other users read or change the secret; refused"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_key_and_the_file(
    tmp_path: Path, setup: str, problem: str
) -> None:
    path = {
        "missing": lambda: str(tmp_path / "missing"),
        "directory": lambda: str(tmp_path),
        "short": lambda: _secret_file(tmp_path, "short\n\n"),
        "empty": lambda: _secret_file(tmp_path, ""),
        "world-readable": lambda: _secret_file(tmp_path, mode=0o644),
        "group-readable": lambda: _secret_file(tmp_path, mode=0o640),
    }[setup]()
    with pytest.raises(ConfigError) as info:
        ledger_secret(path, environ={})
    message = str(info.value)
    assert message.startswith(f"[state] ledger_secret_file = {path!r}")
    assert problem in message and len(message.splitlines()) == 1


@given(mode=st.integers(0o400, 0o777))
def test_any_access_by_others_is_refused_and_the_owners_alone_is_not(mode: int) -> None:
    # hypothesis and tmp_path do not mix (one folder for every example): a folder of its own.
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = _secret_file(Path(folder), mode=mode)
        if mode & 0o077:
            with pytest.raises(ConfigError, match=f"mode {mode:04o} lets other users"):
                ledger_secret(path, environ={})
        else:
            assert ledger_secret(path, environ={}) == SECRET.encode()


def test_neither_is_one_line_naming_both(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        ledger_secret(None, environ={})
    message = str(info.value)
    assert SECRET_VARIABLE in message and "[state] ledger_secret_file" in message
    assert len(message.splitlines()) == 1


def test_the_demo_writes_a_random_secret_once_owner_only(tmp_path: Path) -> None:
    path = str(tmp_path / "data" / "ledger.secret")  # its folder made too

    assert write_secret_file(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    first = ledger_secret(path, environ={})
    assert len(first) >= 32

    assert not write_secret_file(path)  # kept: the ledger's hashes were made under it
    assert ledger_secret(path, environ={}) == first
    other = str(tmp_path / "other.secret")
    assert write_secret_file(other) and ledger_secret(other, environ={}) != first
