"""`capreg eval`: options and environment -> one EvalPlan; reports to the terminal and files."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capreg.cli.commands import registry_target
from capreg.cli.datasets import cache_root
from capreg.cli.errors import CommandError
from capreg.cli.serve import add_embedder_option, model_cache
from capreg.evaluation.runner import (
    DEFAULT_WORKDIR,
    INDEX_MODES,
    CatalogRename,
    EvalError,
    EvalPlan,
    evaluate,
)
from indexer.evaluation.datasets import DATASET_NAMES, datasets_dir
from indexer.evaluation.metrics import KS
from indexer.evaluation.report import Report, format_kinds, format_table, plot_recall, write_json
from indexer.retrieval.retrievers import RETRIEVERS, Retriever
from registry.wire import DEFAULT_LIMIT


def parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError as exc:
        raise CommandError(f"--k {text!r}: expected comma-separated integers") from exc
    if not ks or ks[0] < 1 or ks[-1] > 50:
        raise CommandError(f"--k {text!r}: cut-offs must be between 1 and 50")
    return ks


def plan_from(args: argparse.Namespace) -> EvalPlan:
    """The evaluation the options describe."""
    return EvalPlan(
        dataset=args.dataset,
        datasets=datasets_dir(args.datasets, cache=cache_root()),
        catalogs=tuple(Path(p) for p in args.catalog or ()),
        queries=Path(args.queries) if args.queries else None,
        retrievers=tuple(
            Retriever(r)
            for r in args.retriever or (Retriever.BM25, Retriever.DENSE, Retriever.DEFAULT)
        ),
        ks=parse_ks(args.k),
        limit=args.limit,
        max_queries=args.max_queries,
        server=registry_target(args) if args.server else None,
        db=Path(args.db) if args.db else None,
        model=Path(args.model) if args.model else None,
        model_cache=model_cache(),
        embedder=args.embedder,
        index=args.index,
        progress=sys.stderr.isatty(),
    )


def print_rename(rename: CatalogRename) -> None:
    """Says which name a --catalog file's tools are scored under (relevant ids follow it)."""
    print(f"--catalog {rename.path.name!r}: registered as catalog {rename.name!r}", file=sys.stderr)


def cmd_eval(args: argparse.Namespace) -> int:
    try:
        return _report(args)
    except EvalError as exc:
        raise CommandError(str(exc)) from exc


def _report(args: argparse.Namespace) -> int:
    reports = evaluate(plan_from(args), on_rename=print_rename)
    first = reports[0]
    cut = args.limit or DEFAULT_LIMIT
    print(
        f"{first.dataset}: {first.queries} queries, {first.tools} tools "
        f"(returned: limit {cut} and the registry's own cut)"
    )
    print(format_table(reports))
    if kinds := format_kinds(reports):
        print(f"\nPer kind (percent):\n{kinds}")
    if first.none["queries"]:
        for report in reports:
            print(
                f"{report.retriever}: no-match queries {report.none['queries']}, flagged weak "
                f"{report.none['flagged_weak']:.2%}; answerable flagged weak "
                f"{report.none['false_weak_rate']:.2%}"
            )
    if args.json:
        write_json(reports, Path(args.json), per_query=args.per_query)
    if args.plot:
        plot_recall(reports, Path(args.plot))
    if args.markdown:
        write_markdown(reports, Path(args.markdown), args)
    return 0


def write_markdown(reports: Sequence[Report], path: Path, args: argparse.Namespace) -> None:
    """The table with the command that made it and the date, for docs/results/."""
    from datetime import UTC, datetime

    first = reports[0]
    command = "capreg eval " + " ".join(a for a in sys.argv[2:] if a) if len(sys.argv) > 2 else ""
    lines = [
        f"# {first.dataset}",
        "",
        f"Command: `{command or 'capreg eval'}`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}; {first.queries} queries, {first.tools} tools; "
        f"values in percent, macro-averaged over queries; 'returned' = a default request "
        f"(limit {args.limit or DEFAULT_LIMIT} and the registry's own cut).",
        "",
        format_table(reports),
        "",
    ]
    if kinds := format_kinds(reports):
        lines += [
            "Per kind of request: P@1 and R@5 of each answerable kind; the share of each",
            "kind flagged weak_match (for `none`, the catch rate).",
            "",
            kinds,
            "",
        ]
    if first.none["queries"]:
        lines.append(f"No-match queries: {first.none}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("eval", help="measure search quality against labeled queries")
    parser.add_argument("--dataset", choices=DATASET_NAMES, help="a set in CAPREG_DATASETS")
    parser.add_argument("--datasets", default=os.environ.get("CAPREG_DATASETS"), help="folder")
    parser.add_argument("--catalog", action="append", help="catalog file or folder (repeatable)")
    parser.add_argument("--queries", help="JSON lines: id, query, relevant ids")
    parser.add_argument(
        "--retriever", action="append", choices=RETRIEVERS, help="repeatable; default: all"
    )
    parser.add_argument("--k", default=",".join(map(str, KS)), help="cut-offs, e.g. 1,3,5,10")
    parser.add_argument(
        "--limit", type=int, default=0, help="limit of the returned request (0: the default)"
    )
    parser.add_argument("--max-queries", type=int, default=0, help="only the first N queries")
    parser.add_argument("--server", help="measure a running registry over gRPC (HOST:PORT)")
    parser.add_argument("--api-key", default=os.environ.get("CAPREG_API_KEY"), help="API key")
    parser.add_argument("--ca-file", help="PEM CA certificate: connect to --server with TLS")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per call")
    parser.add_argument("--db", help=f"SQLite file (default {DEFAULT_WORKDIR}/<dataset>.db)")
    parser.add_argument("--model", default=os.environ.get("CAPREG_MODEL"), help="model folder")
    parser.add_argument(
        "--index",
        choices=tuple(INDEX_MODES),
        default="auto",
        help="vector index: exact below the size threshold and IVF above (auto), or one of "
        "them at every size (to compare their quality)",
    )
    add_embedder_option(parser)
    parser.add_argument("--plot", help="write recall@k curves to this PNG")
    parser.add_argument("--json", dest="json", help="write the report as JSON to this file")
    parser.add_argument("--markdown", help="write the table, command and date to this file")
    parser.add_argument(
        "--per-query", action="store_true", help="include every query's answer in --json"
    )
    parser.set_defaults(handler=cmd_eval)
