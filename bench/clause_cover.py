"""Whether a limited answer should take each clause's best tool first: the served order
against `hybrid-clause-cover`, on the tuning splits and on LiveMCPBench.

Usage: python -m bench.clause_cover [--out FILE.md]. A request of several clauses ("find the
flights, then book a hotel") is searched whole and clause by clause; the learned stage then
orders the shortlist by one score, so its best five can all serve one clause. The variant
puts, first, each clause's best candidate by that score (the clause a candidate serves being
the one it blends highest with), then the rest: the usual answer to recall over several needs.
It reorders, fits nothing, and the committed ranker was fitted on these tuning splits, so their
rows favour the order that ranker learned; LiveMCPBench, which no tuning split shares servers
with, is read beside them and not acted on.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.query_diff import recall_changes, reports
from bench.tables import emit
from indexer.evaluation.datasets import TUNING_SETS

SETS: tuple[str, ...] = (*TUNING_SETS, "livemcpbench")
RETRIEVERS: tuple[str, ...] = ("default", "hybrid-clause-cover")
RECALLS: tuple[int, ...] = (3, 5, 10)
COMMAND = "python -m bench.clause_cover --out docs/results/clause-cover.md"


def figures(metrics: dict[str, float]) -> list[float]:
    """P@1 and R@k for each of RECALLS, in percent, from `capreg eval`'s macro metrics."""
    return [100 * metrics["precision@1"], *(100 * metrics[f"recall@{k}"] for k in RECALLS)]


def moved(base: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]], k: int) -> str:
    """Requests whose first `k` differ, and how many of them gain and lose recall@k."""
    changed = sum(b["ranked"][:k] != o["ranked"][:k] for b, o in zip(base, other, strict=True))
    gained, lost, _ = recall_changes(base, other, k)
    return f"{changed} ({len(gained)} gain, {len(lost)} lose)"


def table(results: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    header = "| set | retriever | P@1 | " + " | ".join(f"R@{k}" for k in RECALLS)
    lines = [
        header + " | first 5 differ (R@5 gains, losses) |",
        "| --- | --- | --- | " + " | ".join("---" for _ in RECALLS) + " | --- |",
    ]
    for name, reported in results.items():
        base = reported[RETRIEVERS[0]]["per_query"]
        for retriever in RETRIEVERS:
            cells = " | ".join(f"{v:.2f}" for v in figures(reported[retriever]["metrics"]))
            answers = reported[retriever]["per_query"]
            change = "" if retriever == RETRIEVERS[0] else moved(base, answers, 5)
            lines.append(f"| {name} | {retriever} | {cells} | {change} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for name in SETS:
        with tempfile.TemporaryDirectory() as folder:
            results[name] = reports(name, list(RETRIEVERS), Path(folder))
    lines = [
        "# Each clause's best first (`hybrid-clause-cover`) against the served order",
        "",
        f"Command: `{COMMAND}`",
        "",
        "Percent, macro over answerable requests. The tuning splits are in-sample for the "
        "committed ranker; LiveMCPBench is held out (read, not acted on).",
        "",
        *table(results),
    ]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
