"""What the keys-file tests share: a keys file's path, and the helpers that read and write it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

KEY_RE = re.compile(r"capreg_([0-9a-f]{8})_[A-Za-z0-9_-]{43}")


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.yaml"


def key_id(key: str) -> str:
    match = KEY_RE.fullmatch(key)
    assert match is not None
    return match.group(1)


def write(path: Path, text: str) -> None:
    """Replace the file atomically, as an editor or `add_key` would."""
    tmp = path.with_suffix(".new")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
