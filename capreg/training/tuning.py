"""What the tuning-split benches share: their command line, and the set-up it asks for."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from capreg.evaluation.runner import DEFAULT_WORKDIR
from indexer.embedding import Embedder, load_embedder
from indexer.retrieval.vector_index import blas_kernels, one_thread_per_search


@dataclass(kw_only=True, frozen=True)
class TuningRun:
    datasets: Path | None
    workdir: Path
    out: Path | None
    embedder: Embedder

    def header(self, module: str) -> str:
        """The report's command line, its date, and the BLAS kernels it ran on: its figures
        follow them (decision 0060)."""
        return (
            f"Command: {command_line(module, self.out)} ({datetime.now(UTC):%Y-%m-%d}; "
            f"BLAS kernels: {blas_kernels()})"
        )


def command_line(module: str, out: Path | None) -> str:
    """A bench's command as the reader reruns it, with the OPENBLAS_CORETYPE it ran under
    when one is set."""
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    prefix = f"OPENBLAS_CORETYPE={coretype} " if coretype else ""
    return f"`{prefix}python -m {module}" + (f" --out {out}" if out else "") + "`"


def tuning_run(description: str) -> TuningRun:
    """Parses `--datasets` (default: CAPREG_DATASETS), `--workdir` and `--out`, runs one
    search thread as training does, and loads the packaged model."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--datasets", default=os.environ.get("CAPREG_DATASETS"))
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    one_thread_per_search()
    return TuningRun(
        datasets=Path(args.datasets) if args.datasets else None,
        workdir=args.workdir,
        out=args.out,
        embedder=load_embedder(),
    )
