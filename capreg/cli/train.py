"""`capreg train`: fit the learned ranking stage on the tuning splits (`make train`), and
report every variant on the held-out parts (`--ablation`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from capreg.cli.errors import CommandError
from capreg.cli.serve import add_embedder_option, model_cache
from capreg.evaluation.runner import DEFAULT_WORKDIR
from capreg.training.corpus import Corpus
from capreg.training.cross_fit import ranker_features, train_cross_fitted
from capreg.training.learning import Shortlisted
from capreg.training.stage import (
    REPORT_SETS,
    ablation_report,
    compare_with_committed,
    train,
    training_report,
    write_model,
)
from indexer.embedding import load_embedder
from indexer.embedding.model_files import default_cache_dir, tuned_model_path
from indexer.retrieval.learned import MODEL_FILE, load_learned_stage
from indexer.retrieval.vector_index import one_thread_per_search


def cmd_train(args: argparse.Namespace) -> int:
    one_thread_per_search()
    datasets = Path(args.datasets) if args.datasets else None
    workdir = Path(args.workdir)
    command = "capreg " + " ".join(sys.argv[1:]) if len(sys.argv) > 1 else "capreg train"
    try:
        features = ranker_features(Path(args.model) if args.model else None)
        embedder = load_embedder(features.model, args.embedder, cache_dir=model_cache())
        folds = [
            load_embedder(
                tuned_model_path(model_cache() or default_cache_dir(), overlay),
                args.embedder,
                cache_dir=model_cache(),
            )
            for overlay in features.folds
        ]
        if folds:
            result = train_cross_fitted(embedder, folds, datasets=datasets, workdir=workdir)
        else:
            result = train(
                embedder,
                datasets=datasets,
                workdir=workdir,
                raw=bool(args.ablation),
            )
    except (ValueError, FileNotFoundError) as exc:
        raise CommandError(str(exc)) from exc
    output = Path(args.output)
    if args.check:
        committed = load_learned_stage(output)
        if committed is None:
            print(f"{output}: no committed model to compare with", file=sys.stderr)
            return 1
        check = compare_with_committed(committed, output.read_text(encoding="utf-8"), result)
        verdict = "reproduces" if check.holds else "does not reproduce"
        print(f"{output}: retraining {verdict} the committed model: {check.describe()}")
        return 0 if check.holds else 1
    write_model(result.stage, output)
    print(f"wrote {output}")
    if args.report:
        Path(args.report).write_text(training_report(result, command), encoding="utf-8")
        print(f"wrote {args.report}")
    if args.ablation:
        tuning = [item for items in result.tuning.values() for item in items]
        raw_tuning = [item for items in (result.raw_tuning or {}).values() for item in items]
        held_out: dict[str, list[Shortlisted]] = {}
        raw_held_out: dict[str, list[Shortlisted]] = {}
        for name in REPORT_SETS:
            corpus = Corpus(name, embedder, datasets=datasets, workdir=workdir)
            try:
                held_out[name] = corpus.shortlists(result.stage.adapter)
                if not folds:  # the variant without the adapter is refitted over one encoder only
                    raw_held_out[name] = corpus.shortlists(None)
            finally:
                corpus.close()
        text = ablation_report(
            result.stage,
            tuning,
            held_out,
            command,
            raw_tuning=raw_tuning,
            raw_held_out=raw_held_out if not folds else None,
        )
        Path(args.ablation).write_text(text, encoding="utf-8")
        print(f"wrote {args.ablation}")
    return 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("train", help="fit the learned ranking stage on the tuning splits")
    parser.add_argument("--datasets", default=os.environ.get("CAPREG_DATASETS"), help="folder")
    parser.add_argument("--output", default=str(MODEL_FILE), help="model file to write")
    parser.add_argument("--report", help="write the training report (markdown) here")
    parser.add_argument("--ablation", help="also score every variant on the held-out sets")
    parser.add_argument(
        "--check", action="store_true", help="retrain and compare with --output; write nothing"
    )
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR), help="registry databases")
    parser.add_argument("--model", default=os.environ.get("CAPREG_MODEL"), help="model folder")
    add_embedder_option(parser)
    parser.set_defaults(handler=cmd_train)
