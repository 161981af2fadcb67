"""BM25 over every row, the first stage's lexical pass, timed alone at a given index size.

Usage: python -m bench.bm25_pass --tools 1000000 [--tools 100000 ...] [--queries 200]
       [--mirrored] --datasets DIR [--out FILE.md]

The index is `ArrayBM25` over the document texts of the shared datasets' pool grown to the
size as the benchmarks grow it: mirror copies past the unique tools, each copy's description
starting "(copy N) " as in `bench.registration_cost --distinct` (with `--mirrored`, copies
share their original's text, as in `bench.performance`). The texts are bench.performance's:
the same sample of labeled task texts cut at 500 characters, each with its clauses, as the
first stage scores them. A first round computes every term's weights (a server has them from
its first searches); the second is timed, text by text.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.registration_cost import distinct
from capreg.evaluation.sampler import load_pool, with_variants
from indexer.retrieval.array_bm25 import ArrayBM25
from indexer.retrieval.document import document_text
from indexer.retrieval.fusion import split_intents
from indexer.retrieval.lexical import words


def measure(documents: list[str], texts: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    index = ArrayBM25(documents)
    built = time.perf_counter() - started
    for text in texts:
        index.scores(text)
    samples = []
    postings = []
    for text in texts:
        began = time.perf_counter()
        index.scores(text)
        samples.append((time.perf_counter() - began) * 1000)
        terms = index.term_ids(words(text))
        postings.append(sum(len(index.documents(t)) for t in terms))
    return {
        "build_s": built,
        "p50_ms": statistics.median(samples),
        "mean_ms": statistics.fmean(samples),
        "p90_ms": float(np.percentile(samples, 90)),
        "postings": statistics.median(postings),
        "ns_per_posting": 1e6 * sum(samples) / max(1, sum(postings)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, action="append", required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--mirrored", action="store_true")
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    pool, tasks = load_pool(args.datasets)
    rng = random.Random(11)  # bench.performance's sample
    queries = [t.query[:500] for t in rng.sample(tasks, args.queries)]
    texts = [text for query in queries for text in (query, *split_intents(query))]
    lines = [
        "# BM25 over every row, per text",
        "",
        f"Command: `python -m bench.bm25_pass {' '.join(f'--tools {n}' for n in args.tools)} "
        f"--queries {args.queries}{' --mirrored' if args.mirrored else ''} "
        "--datasets ../shared/datasets`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}; {len(queries)} task texts cut at 500 characters "
        f"and their clauses ({len(texts)} texts), each scored once after a first round; "
        f"copies {'share their original' if args.mirrored else 'each have their own'} text.",
        "",
        "| tools | p50 ms | mean ms | p90 ms | postings per text (median) | ns per posting |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for size in args.tools:
        grown = with_variants(pool, size)[:size]
        if not args.mirrored:
            grown = distinct(grown)
        documents = [document_text(p.tool, p.title) for p in grown]
        row = measure(documents, texts)
        print({"tools": size, **row}, flush=True)
        lines.append(
            f"| {size:,} | {row['p50_ms']:.2f} | {row['mean_ms']:.2f} | {row['p90_ms']:.2f} "
            f"| {row['postings']:,.0f} | {row['ns_per_posting']:.2f} |"
        )
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
