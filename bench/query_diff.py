"""Which queries one retriever wins and loses against another, by recall@k per query.

Usage: python -m bench.query_diff --dataset livemcpbench --base hybrid-z --other default
[--k 5] [--out FILE.md]. Runs `capreg eval` once with both retrievers (per-query answers in
its JSON) and counts the answerable queries whose recall@k rises, falls or stays; with --out,
writes that count and every changed query to a Markdown file. An aggregate difference of a
point or two on a small set is a handful of queries: this shows how many, and which.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from indexer.evaluation.metrics import recall_at_k

ROOT = Path(__file__).resolve().parent.parent


def reports(dataset: str, retrievers: list[str], folder: Path) -> dict[str, dict[str, Any]]:
    """`capreg eval`'s JSON report of each retriever on `dataset`, every query's answer
    included (`per_query`) beside the macro `metrics`."""
    out = folder / "answers.json"
    command = [
        sys.executable,
        "-m",
        "capreg.cli",
        "eval",
        "--dataset",
        dataset,
        "--per-query",
        "--json",
        str(out),
    ]
    command += [arg for retriever in retrievers for arg in ("--retriever", retriever)]
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    if result.returncode:  # capreg eval has named the problem on stderr
        sys.exit(f"query_diff: capreg eval failed (exit {result.returncode})")
    return {item["retriever"]: item for item in json.loads(out.read_text())}


def per_query(dataset: str, retrievers: list[str], folder: Path) -> dict[str, list[Any]]:
    """Every query's answer, per retriever."""
    return {name: item["per_query"] for name, item in reports(dataset, retrievers, folder).items()}


Change = tuple[str, float, float]


def recall_changes(
    base: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]], k: int
) -> tuple[list[Change], list[Change], int]:
    """The answerable queries whose recall@k rises from `base` to `other` and those whose
    recall@k falls (id, before, after), and how many stay."""
    gained: list[Change] = []
    lost: list[Change] = []
    same = 0
    for before_answer, after_answer in zip(base, other, strict=True):
        gold = frozenset(before_answer["relevant"])
        if not gold:
            continue
        before = recall_at_k(before_answer["ranked"], gold, k)
        after = recall_at_k(after_answer["ranked"], gold, k)
        if after > before:
            gained.append((before_answer["id"], before, after))
        elif after < before:
            lost.append((before_answer["id"], before, after))
        else:
            same += 1
    return gained, lost, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--base", required=True, help="the retriever compared against")
    parser.add_argument("--other", required=True)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        answers = per_query(args.dataset, [args.base, args.other], Path(folder))
    gained, lost, same = recall_changes(answers[args.base], answers[args.other], args.k)
    summary = (
        f"{args.dataset}, recall@{args.k}, {args.other} against {args.base}: "
        f"{len(gained)} queries gained, {len(lost)} lost, {same} unchanged"
    )
    print(summary)
    if args.out:
        command = (
            f"python -m bench.query_diff --dataset {args.dataset} --base {args.base} "
            f"--other {args.other} --k {args.k} --out {args.out}"
        )
        lines = [
            f"# {args.other} against {args.base} on {args.dataset}",
            "",
            f"Command: `{command}`",
            "",
            summary + ".",
            "",
            f"| query id | recall@{args.k} {args.base} | {args.other} |",
            "| --- | --- | --- |",
        ]
        for query_id, before, after in gained + lost:
            lines.append(f"| {query_id} | {before:.2f} | {after:.2f} |")
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
