"""The committed generated code is exactly what proto/generate.py makes from the proto."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

GENERATED = ROOT / "registry" / "proto"


def test_generated_code_matches_the_proto(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "proto" / "generate.py"), "--out", str(tmp_path)], check=True
    )
    names = sorted(p.name for p in tmp_path.iterdir() if p.name != "__init__.py")
    assert names == sorted(p.name for p in GENERATED.iterdir() if p.name.startswith("registry_"))
    for name in names:
        fresh = (tmp_path / name).read_text()
        committed = (GENERATED / name).read_text()
        assert fresh == committed, f"{name} drifted: run `make proto` and commit"
