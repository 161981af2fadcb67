"""Is the fine-tuned encoder best at full strength, or interpolated toward the base?

Weight-space interpolation (base + alpha * (tuned - base)) keeps part of what the base knows
that a small fine-tune wears away. Chosen on requests no encoder saw: each fold encoder
(`capreg train-encoder --fold I`, fitted without fold I of the tuning requests) is scored on
its own left-out fold of each tuning split, dense alone over the split's whole catalog, and
the two folds are pooled. Needs the fold encoders (`make train-encoder`).

    python -m bench.encoder_interpolation --out docs/results/encoder-interpolation.md
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from capreg.training.encoder import FOLDS, fold_of, fold_overlay, tool_documents
from indexer.embedding import EmbedderBackend, load_embedder
from indexer.embedding.model_files import RECORD_FILE, WEIGHTS, base_model_path, tuned_model_path
from indexer.evaluation.datasets import load_dataset

SETS = ("mcp-agentstyle:tuning", "metatool:tuning", "stabletoolbench:tuning")


@dataclass(frozen=True)
class Split:
    ids: list[str]
    documents: list[str]
    requests: list[tuple[str, frozenset[str]]]


def load_split(name: str, datasets: Path | None) -> Split:
    dataset = load_dataset(name, datasets)
    documents = tool_documents(dataset)
    requests = [
        (q.query.strip(), frozenset(q.relevant))
        for q in dataset.queries
        if q.relevant and not q.steps
    ]
    return Split(list(documents), list(documents.values()), requests)


def interpolate(overlay: Path, alpha: float, target: Path) -> Path:
    """`overlay` moved toward the base by `alpha` (1: as fitted), with its record."""
    from safetensors.numpy import load_file, save_file

    base = load_file(str(base_model_path() / WEIGHTS))
    tuned = load_file(str(overlay))
    mixed = {
        name: np.ascontiguousarray(
            (base[name] + alpha * (tensor.astype(np.float32) - base[name])).astype(np.float16)
        )
        for name, tensor in tuned.items()
    }
    target.mkdir(parents=True, exist_ok=True)
    save_file(mixed, str(target / overlay.name))
    record = json.loads(overlay.with_name(RECORD_FILE.name).read_text(encoding="utf-8"))
    record["interpolated_toward_base"] = alpha
    (target / RECORD_FILE.name).write_text(json.dumps(record, indent=2), encoding="utf-8")
    return target / overlay.name


def score(
    vectors: np.ndarray, tools: np.ndarray, ids: list[str], gold: Sequence[frozenset[str]]
) -> tuple[int, int, float]:
    """Hits at 1, and the summed recall at 5, of `vectors` against `tools`."""
    order = np.argsort(-(vectors @ tools.T), axis=1)[:, :5]
    hits = sum(1 for row, relevant in zip(order, gold, strict=True) if ids[row[0]] in relevant)
    recall = sum(
        len({ids[i] for i in row} & relevant) / len(relevant)
        for row, relevant in zip(order, gold, strict=True)
    )
    return hits, len(gold), recall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alphas", default="0,0.5,0.7,1")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--sample", type=int, default=500, help="requests per fold and split")
    parser.add_argument("--datasets", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",")]
    names = args.sets.split(",")
    overlays = [fold_overlay(fold) for fold in range(FOLDS)]
    missing = [str(o) for o in overlays if not o.is_file()]
    if missing:
        raise SystemExit(f"fold encoders missing ({', '.join(missing)}): run make train-encoder")
    splits = {name: load_split(name, args.datasets) for name in names}
    # (alpha, set) -> [hits at 1, requests, summed recall at 5]
    totals: dict[tuple[float, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="capreg-interpolation-") as scratch:
        for fold, overlay in enumerate(overlays):
            for alpha in alphas:
                mixed = interpolate(overlay, alpha, Path(scratch) / f"{fold}-{alpha}")
                folder = tuned_model_path(Path(scratch), mixed)
                embedder = load_embedder(folder, EmbedderBackend.TORCH)
                for name, split in splits.items():
                    own = [r for r in split.requests if fold_of(r[0], FOLDS) == fold]
                    if len(own) > args.sample:
                        own = random.Random(fold).sample(own, args.sample)
                    tools = embedder.encode(split.documents)
                    vectors = embedder.encode([text for text, _ in own])
                    hits, count, recall = score(vectors, tools, split.ids, [g for _, g in own])
                    total = totals.setdefault((alpha, name), [0, 0, 0.0])
                    total[0] += hits
                    total[1] += count
                    total[2] += recall
                    print(f"fold {fold} alpha {alpha} {name}: {hits}/{count}", flush=True)
    lines = [
        "# The fine-tuned encoder interpolated toward the base",
        "",
        "Command: `python -m bench.encoder_interpolation"
        + (f" --out {args.out}" if args.out else "")
        + "`. Dense alone, each fold encoder on its own left-out fold of each tuning split "
        f"(at most {args.sample} requests per fold, seeded), folds pooled; alpha 0 is the "
        "base, 1 the fold encoder as fitted. P@1 / R@5 in percent (requests).",
        "",
        "| alpha | " + " | ".join(names) + " |",
        "| --- |" + " --- |" * len(names),
    ]
    for alpha in alphas:
        cells = []
        for name in names:
            first, requests, recalled = totals[(alpha, name)]
            cells.append(
                f"{100 * first / requests:.2f} / {100 * recalled / requests:.2f} ({int(requests)})"
            )
        lines.append(f"| {alpha:g} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
