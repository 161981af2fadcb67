"""Whether the query adapter's fit depends on the CPU's vector kernels, in float32 and float64.

Another CPU is simulated by torch's plain kernels and MKL's compatible code path
(`ATEN_CPU_CAPABILITY=default`, `MKL_CBWR=COMPATIBLE`) against the best this CPU has. Each fit
runs in its own process on the three tuning splits, as `make train` fits the committed
adapter; the stored (float32) matrices are compared weight by weight (decision 0059).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.tables import emit
from bench.tuning import command_line
from indexer.embedding import load_embedder
from indexer.evaluation.adapting import fit_adapter
from indexer.evaluation.datasets import TUNING_SETS
from registry.evaluate import DEFAULT_WORKDIR
from registry.training import Corpus

PLAIN = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}


def fit_once(single: bool, datasets: Path | None, workdir: Path, out: Path) -> None:
    """One fit in this process; writes the stored matrix to `out` and prints the seconds."""
    embedder = load_embedder()
    sets = []
    for name in TUNING_SETS:
        corpus = Corpus(name, embedder, datasets=datasets, workdir=workdir)
        try:
            sets.append(corpus.adapter_set())
        finally:
            corpus.close()
    started = time.perf_counter()
    adapter = fit_adapter(sets, embedder.model_id, single=single)
    seconds = time.perf_counter() - started
    np.save(out, adapter.matrix)
    print(f"{seconds:.1f}")


def run_fit(single: bool, env: dict[str, str], args: argparse.Namespace, out: Path) -> float:
    command = [sys.executable, "-m", "bench.adapter_kernels", "--fit-to", str(out)]
    command += ["--workdir", str(args.workdir)]
    if args.datasets:
        command += ["--datasets", args.datasets]
    if single:
        command.append("--single")
    done = subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=os.environ.get("CAPREG_DATASETS"))
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--fit-to", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--single", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    datasets = Path(args.datasets) if args.datasets else None
    if args.fit_to:
        fit_once(args.single, datasets, args.workdir, args.fit_to)
        return
    lines = [
        "# The query adapter's fit under two sets of CPU kernels",
        "",
        f"Command: {command_line('bench.adapter_kernels', args.out)} "
        f"({datetime.now(UTC):%Y-%m-%d})",
        "",
        "Each fit on the three tuning splits, in its own process: once with this CPU's best "
        "kernels, once with torch's plain kernels and MKL's compatible path "
        f"({', '.join(f'{k}={v}' for k, v in PLAIN.items())}). The stored matrices are "
        "float32 either way.",
        "",
        "| fitted in | weights | weights that differ | largest difference | fit seconds "
        "(best kernels / plain) |",
        "| --- | --- | --- | --- | --- |",
    ]
    with tempfile.TemporaryDirectory() as folder:
        for single in (True, False):
            best, plain = Path(folder) / "best.npy", Path(folder) / "plain.npy"
            best_seconds = run_fit(single, {}, args, best)
            plain_seconds = run_fit(single, PLAIN, args, plain)
            a, b = np.load(best), np.load(plain)
            lines.append(
                f"| {'float32' if single else 'float64'} | {a.size:,} | "
                f"{int((a != b).sum()):,} | {float(np.abs(a - b).max()):.1e} | "
                f"{best_seconds:.0f} / {plain_seconds:.0f} |"
            )
    emit(lines, args.out)


if __name__ == "__main__":
    main()
