"""`capreg train-encoder`: fine-tune the packaged MiniLM on the tuning splits and write the
overlay the project ships (`make train` runs it before fitting the learned stage)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

from capreg.cli.errors import CommandError
from capreg.training.encoder import (
    FOLDS,
    EncoderFit,
    EncoderSettings,
    fine_tune,
    fold_overlay,
    pairs_by_set,
    without_fold,
    write_overlay,
)
from indexer.embedding.model_files import OVERLAY_FILE, RECORD_FILE, base_model_path


def report(fit: EncoderFit, counts: dict[str, int], overlay: Path, size: int, command: str) -> str:
    lines = [
        "# Encoder fine-tuning",
        "",
        f"Command: `{command}`",
        "",
        "The packaged all-MiniLM-L6-v2, fitted contrastively (in-batch negatives, both",
        "directions) on (request, gold tool document) pairs of every tuning split; the word",
        "embeddings stay frozen. Held-out figures: docs/results/summary.md.",
        "",
        "| tuning split | pairs |",
        "| --- | --- |",
        *(f"| {name} | {count} |" for name, count in counts.items()),
        f"| all | {fit.pairs} (sha256 {fit.pairs_sha256}) |",
        "",
        "| setting | value |",
        "| --- | --- |",
        *(f"| {f.name} | {getattr(fit.settings, f.name)} |" for f in fields(fit.settings)),
        "",
        f"{fit.steps} steps in {fit.seconds:.0f} s (wall time, this machine); last batch loss "
        f"{fit.final_loss}. Overlay: `{overlay}` ({size / 1e6:.1f} MB, float16).",
        "",
    ]
    return "\n".join(lines)


def cmd_train_encoder(args: argparse.Namespace) -> int:
    datasets = Path(args.datasets) if args.datasets else None
    settings = EncoderSettings(
        seed=args.seed, epochs=args.epochs, batch_size=args.batch_size, max_tokens=args.max_tokens
    )
    command = "capreg " + " ".join(sys.argv[1:]) if len(sys.argv) > 1 else "capreg train-encoder"
    try:
        by_set = pairs_by_set(datasets)
    except (ValueError, FileNotFoundError) as exc:
        raise CommandError(str(exc)) from exc
    pairs = [pair for items in by_set.values() for pair in items]
    if args.fold is not None:
        # The encoder whose features the learned stage learns this fold's requests from.
        try:
            pairs = without_fold(pairs, args.fold, args.folds)
        except ValueError as exc:
            raise CommandError(f"--fold: {exc}") from exc
        by_set = {
            name: without_fold(items, args.fold, args.folds) for name, items in by_set.items()
        }
    base = base_model_path()
    default = OVERLAY_FILE if args.fold is None else fold_overlay(args.fold, args.folds)
    overlay = Path(args.output) if args.output else default
    with tempfile.TemporaryDirectory(prefix="capreg-encoder-") as scratch:
        fit = fine_tune(base, pairs, Path(scratch), settings, sets=tuple(by_set))
        size = write_overlay(Path(scratch), base, overlay)
    record = overlay.with_name(RECORD_FILE.name)
    record.write_text(json.dumps(fit.record("all-MiniLM-L6-v2"), indent=2) + "\n", "utf-8")
    print(f"wrote {overlay} ({size / 1e6:.1f} MB) and {record}")
    if args.report:
        counts = {name: len(items) for name, items in by_set.items()}
        Path(args.report).write_text(report(fit, counts, overlay, size, command), "utf-8")
        print(f"wrote {args.report}")
    return 0


def add_parser(commands: Any) -> None:
    defaults = EncoderSettings()
    parser = commands.add_parser(
        "train-encoder", help="fine-tune the sentence encoder on the tuning splits"
    )
    parser.add_argument("--datasets", default=os.environ.get("CAPREG_DATASETS"), help="folder")
    parser.add_argument(
        "--output", help=f"overlay file to write (default {OVERLAY_FILE}; a fold's in .capreg/)"
    )
    parser.add_argument(
        "--fold",
        type=int,
        help="fit without this fold of the tuning requests (the learned stage's features)",
    )
    parser.add_argument("--folds", type=int, default=FOLDS, help="how many folds (with --fold)")
    parser.add_argument("--report", help="write the fit's report (markdown) here")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--max-tokens", type=int, default=defaults.max_tokens)
    parser.set_defaults(handler=cmd_train_encoder)
