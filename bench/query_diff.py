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
from pathlib import Path
from typing import Any

from indexer.evaluation.metrics import recall_at_k

ROOT = Path(__file__).resolve().parent.parent


def per_query(dataset: str, retrievers: list[str], folder: Path) -> dict[str, list[Any]]:
    out = folder / "answers.json"
    command = [
        sys.executable,
        "-m",
        "registry.cli",
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
    return {item["retriever"]: item["per_query"] for item in json.loads(out.read_text())}


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
    gained, lost, same = [], [], 0
    for base, other in zip(answers[args.base], answers[args.other], strict=True):
        gold = frozenset(base["relevant"])
        if not gold:
            continue
        before = recall_at_k(base["ranked"], gold, args.k)
        after = recall_at_k(other["ranked"], gold, args.k)
        if after > before:
            gained.append((base["id"], before, after))
        elif after < before:
            lost.append((base["id"], before, after))
        else:
            same += 1
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
