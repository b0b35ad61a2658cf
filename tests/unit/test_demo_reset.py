"""The demo's reset clears what an earlier demo wrote, the output's published links among them."""

from __future__ import annotations

from pathlib import Path

import pytest

from segcompact.app.demo import MARKER, reset
from segcompact.config import load_config
from segcompact.errors import UsageError
from segcompact.lease import LEASE_DIR
from tests.support.config import write_config


@pytest.mark.parametrize("links_first", [True, False])
def test_reset_clears_published_links_and_versions_whatever_their_order(
    tmp_path: Path, links_first: bool
) -> None:
    root = tmp_path / "segments"
    root.mkdir()
    (root / MARKER).touch()
    config = load_config(write_config(tmp_path, [root]))
    out = Path(config.output.path)
    versions = out / ".versions" / "t-0" / "v1-a"
    versions.mkdir(parents=True)
    (versions / "00000000000000000000.log").write_bytes(b"x")
    (out / LEASE_DIR).mkdir()
    # The link (to a directory) before or after the versions it points into, as a listing
    # may give them.
    name = "a-0" if links_first else "z-0"
    (out / name).symlink_to(versions.relative_to(out))
    (out / "stray.txt").write_text("x")

    assert reset(config) == root
    assert sorted(p.name for p in out.iterdir()) == [LEASE_DIR]
    assert sorted(p.name for p in root.iterdir()) == [MARKER]


def test_reset_refuses_a_sample_root_the_demo_did_not_write(tmp_path: Path) -> None:
    root = tmp_path / "segments"
    root.mkdir()
    (root / "00000000000000000000.log").write_bytes(b"mine")
    config = load_config(write_config(tmp_path, [root]))
    with pytest.raises(UsageError, match="was not written by segcompact demo"):
        reset(config)
    assert (root / "00000000000000000000.log").read_bytes() == b"mine"
