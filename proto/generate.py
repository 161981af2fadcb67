"""Generates the Python gRPC code for proto/capreg/v1/registry.proto into registry/proto/.

Run `python proto/generate.py` after changing the proto; the output is committed and
tests/registry/test_generated_code.py fails when it drifts. `--out DIR` writes elsewhere
(the drift test uses it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
PROTO = Path("capreg/v1/registry.proto")
DEFAULT_OUT = ROOT / "registry" / "proto"
GENERATED = (
    "registry_pb2.py",
    "registry_pb2.pyi",
    "registry_pb2_grpc.py",
    "registry_pb2_grpc.pyi",
)
# protoc writes absolute imports ("from capreg.v1 import registry_pb2"); the code lives in
# the registry.proto package, so the import is rewritten to point there.
_IMPORT = re.compile(r"^from capreg\.v1 import registry_pb2", re.MULTILINE)


def generate(out: Path) -> None:
    """Writes the generated modules into `out` (created if missing)."""
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "grpc_tools.protoc",
                f"-I{PROTO_DIR}",
                f"--python_out={tmp}",
                f"--grpc_python_out={tmp}",
                f"--mypy_out={tmp}",
                f"--mypy_grpc_out={tmp}",
                str(PROTO),
            ],
            check=True,
            env=env,
        )
        out.mkdir(parents=True, exist_ok=True)
        for name in GENERATED:
            text = (Path(tmp) / PROTO.parent / name).read_text(encoding="utf-8")
            text = _IMPORT.sub("from registry.proto import registry_pb2", text)
            (out / name).write_text(text, encoding="utf-8")
    init = out / "__init__.py"
    if not init.exists():
        init.write_text('"""Generated gRPC code for capreg.v1 (see proto/generate.py)."""\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent)) is None:
        sys.exit("protoc-gen-mypy not found beside this Python: install the dev extras")
    generate(args.out)


if __name__ == "__main__":
    main()
