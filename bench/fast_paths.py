"""Search quality of each faster path against the exact float32 path, on every labeled set.

Usage: python -m bench.fast_paths [--out FILE.md] (`make fast-paths`). Runs `capreg eval`
(default retriever) with the float32 and int8 ONNX models, each with exact vector search and
with the IVF index forced at every size, and tabulates recall@5 and the other headline
figures. The exact float32 path is the reference: the performance issue asks every faster
path to stay within 0.5 points of recall@5 on every set.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from registry.config import APPROXIMATE_FROM

ROOT = Path(__file__).resolve().parent.parent
SETS = (
    "livemcpbench",
    "seal-tools:dev",
    "seal-tools:test_in_domain",
    "seal-tools:test_out_domain",
    "stabletoolbench",
    "metatool",
    "metatool-multi",
)
# (label, embedder backend, vector index)
PATHS = (
    ("float32, exact", "onnx", "exact"),
    ("float32, IVF", "onnx", "approximate"),
    ("int8, exact", "onnx-int8", "exact"),
    ("int8, IVF", "onnx-int8", "approximate"),
)
FIGURES = ("recall@5", "precision@1", "ndcg@10", "f1@returned")
TOLERANCE = 0.5


def evaluate(dataset: str, embedder: str, index: str, workdir: Path) -> dict[str, float]:
    out = workdir / f"{dataset.replace(':', '-')}-{embedder}-{index}.json"
    command = [
        sys.executable,
        "-m",
        "capreg.cli",
        "eval",
        "--dataset",
        dataset,
        "--retriever",
        "default",
        "--embedder",
        embedder,
        "--index",
        index,
        "--json",
        str(out),
    ]
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    metrics: dict[str, float] = json.loads(out.read_text())["metrics"]
    return {name: 100 * metrics[name] for name in FIGURES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "fast-paths.md")
    args = parser.parse_args()
    results: dict[tuple[str, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for dataset in SETS:
            for label, embedder, index in PATHS:
                results[dataset, label] = evaluate(dataset, embedder, index, Path(folder))
                print(dataset, label, results[dataset, label], flush=True)
    reference = PATHS[0][0]
    lines = [
        "# Faster paths against the exact float32 path",
        "",
        "Command: `python -m bench.fast_paths` (`make fast-paths`)  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}. Default retriever; each cell is recall@5 "
        "(percent) and, in brackets, its difference from the float32 exact path. IVF is "
        f"forced at every size here (in service it starts at {APPROXIMATE_FROM:,} tools). "
        "int8: ONNX Runtime dynamic quantization of the weights, per channel.",
        "",
        "| set | " + " | ".join(label for label, _, _ in PATHS) + " |",
        "| --- |" + " --- |" * len(PATHS),
    ]
    worst = {label: 0.0 for label, _, _ in PATHS}
    for dataset in SETS:
        base = results[dataset, reference]["recall@5"]
        cells = []
        for label, _, _ in PATHS:
            value = results[dataset, label]["recall@5"]
            worst[label] = min(worst[label], value - base)
            cells.append(f"{value:.2f}" + ("" if label == reference else f" ({value - base:+.2f})"))
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    lines += ["", "Largest recall@5 loss against float32 exact (tolerance 0.5 points):", ""]
    for label, _, _ in PATHS[1:]:
        verdict = "within" if worst[label] >= -TOLERANCE else "outside"
        lines.append(f"- {label}: {worst[label]:+.2f} ({verdict} the tolerance)")
    lines += ["", "All headline figures:", ""]
    lines += ["| set | path | " + " | ".join(FIGURES) + " |", "| --- | --- |" + " --- |" * 4]
    for dataset in SETS:
        for label, _, _ in PATHS:
            row = results[dataset, label]
            values = " | ".join(f"{row[name]:.2f}" for name in FIGURES)
            lines.append(f"| {dataset} | {label} | {values} |")
    lines.append("")
    report = "\n".join(lines)
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)


if __name__ == "__main__":
    main()
