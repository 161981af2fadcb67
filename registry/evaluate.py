"""`capreg eval`: labeled queries through the registry's search path, in-process or over gRPC."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

from indexer.embedding import BACKENDS
from indexer.evaluation.datasets import DATASET_NAMES, CatalogSource, LabeledQuery, load_dataset
from indexer.evaluation.metrics import KS
from indexer.evaluation.report import (
    Answer,
    Report,
    Searcher,
    format_table,
    plot_recall,
    run,
    write_json,
)
from registry.catalog_dir import CATALOG_SUFFIXES, request_name
from registry.config import APPROXIMATE_FROM
from registry.engine import DEFAULT_LIMIT, RETRIEVERS, Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import Store

# --index: the size from which the vector index is approximate (IVF).
INDEX_MODES = {"auto": APPROXIMATE_FROM, "exact": 2**62, "approximate": 1}

DEFAULT_WORKDIR = Path(".capreg") / "eval"


class EvalError(Exception):
    """Bad evaluation input: the message names the file or entry."""


def bearer(api_key: str | None) -> tuple[tuple[str, str | bytes], ...] | None:
    """gRPC call metadata carrying an API key, or None without one."""
    return (("authorization", f"Bearer {api_key}"),) if api_key else None


def generic_catalogs(paths: Sequence[Path]) -> list[CatalogSource]:
    """Catalog files (or folders of them) in any supported format."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in CATALOG_SUFFIXES))
        elif path.is_file():
            files.append(path)
        else:
            raise EvalError(f"--catalog {path}: no such file or folder")
    sources = []
    for file in files:
        content = file.read_text(encoding="utf-8")
        sources.append(CatalogSource(request_name(file, content), content, ""))
    return sources


def read_queries(path: Path) -> list[LabeledQuery]:
    """JSON lines of {"id", "query", "relevant": ["<catalog>/<tool>", ...]}."""
    queries = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalError(f"--queries {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            relevant = entry.get("relevant", [])
            if not isinstance(entry["query"], str) or not isinstance(relevant, list):
                raise TypeError("query must be a string and relevant a list")
            queries.append(
                LabeledQuery(str(entry.get("id", number)), entry["query"], frozenset(relevant))
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EvalError(f"{path}:{number}: {exc}") from exc
    return queries


def load_catalogs(registry: Registry, sources: Sequence[CatalogSource]) -> int:
    """Registers `sources` through the normal path and removes any other catalog."""
    wanted = set()
    with registry.bulk():
        for source in sources:
            outcome = registry.register(source.content, name=source.name, fmt=source.format)
            wanted.add(outcome.catalog)
        for catalog in registry.catalogs():
            if catalog.name not in wanted:
                registry.delete(catalog.name)
    return len(registry.index)


def in_process_searcher(registry: Registry, retriever: str, depth: int, limit: int) -> Searcher:
    def search(query: str) -> Answer:
        ranked = registry.search(query, depth, retriever=retriever)
        returned = registry.search(query, limit, retriever=retriever)
        return Answer(
            tuple(h.entry.id for h in ranked.hits),
            tuple(h.entry.id for h in returned.hits),
            returned.weak_match,
        )

    return search


def grpc_searcher(
    address: str, api_key: str | None, timeout: float, depth: int, limit: int
) -> tuple[Searcher, Any]:
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.CapabilityRegistryStub(channel)
    metadata = bearer(api_key)

    def search(query: str) -> Answer:
        ranked = stub.Search(
            pb.SearchRequest(query=query, limit=depth), timeout=timeout, metadata=metadata
        )
        returned = stub.Search(
            pb.SearchRequest(query=query, limit=limit), timeout=timeout, metadata=metadata
        )
        return Answer(
            tuple(h.id for h in ranked.hits),
            tuple(h.id for h in returned.hits),
            returned.weak_match,
        )

    return search, channel


def register_over_grpc(
    address: str, api_key: str | None, sources: Sequence[CatalogSource], timeout: float
) -> None:
    metadata = bearer(api_key)
    with grpc.insecure_channel(address, options=[("grpc.max_send_message_length", -1)]) as ch:
        stub = pb_grpc.CapabilityRegistryStub(ch)
        for source in sources:
            request = pb.RegisterCatalogRequest(
                name=source.name, content=source.content, format=source.format
            )
            stub.RegisterCatalog(request, timeout=timeout, metadata=metadata)


def evaluate_args(args: argparse.Namespace) -> list[Report]:
    """Runs the evaluation `args` describe and returns one report per retriever."""
    if args.dataset:
        try:
            dataset = load_dataset(args.dataset, args.datasets)
        except (ValueError, FileNotFoundError) as exc:
            raise EvalError(str(exc)) from exc
        name, sources, queries = dataset.name, list(dataset.catalogs), list(dataset.queries)
    elif args.catalog and args.queries:
        name = Path(args.queries).stem
        sources, queries = (
            generic_catalogs([Path(p) for p in args.catalog]),
            read_queries(Path(args.queries)),
        )
    else:
        raise EvalError("give --dataset NAME, or --catalog PATH... with --queries FILE.jsonl")
    if args.max_queries:
        queries = queries[: args.max_queries]
    retrievers = args.retriever or ["bm25", "dense", "default"]
    ks = parse_ks(args.k)
    progress = sys.stderr.isatty()
    if args.server:
        if retrievers != ["default"]:
            raise EvalError(
                "--server measures the registry's own retriever: use --retriever default"
            )
        register_over_grpc(args.server, args.api_key, sources, args.timeout)
        search, channel = grpc_searcher(
            args.server, args.api_key, args.timeout, max(ks), args.limit
        )
        try:
            tools = count_tools_over_grpc(args.server, args.api_key, args.timeout)
            return [run(name, "default", tools, queries, search, ks=ks, progress=progress)]
        finally:
            channel.close()
    return _evaluate_in_process(args, name, sources, queries, retrievers, ks, progress)


def parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError as exc:
        raise EvalError(f"--k {text!r}: expected comma-separated integers") from exc
    if not ks or ks[0] < 1 or ks[-1] > 50:
        raise EvalError(f"--k {text!r}: cut-offs must be between 1 and 50")
    return ks


def count_tools_over_grpc(address: str, api_key: str | None, timeout: float) -> int:
    metadata = bearer(api_key)
    with grpc.insecure_channel(address) as channel:
        reply = pb_grpc.CapabilityRegistryStub(channel).ListCatalogs(
            pb.ListCatalogsRequest(), timeout=timeout, metadata=metadata
        )
    return sum(c.tool_count for c in reply.catalogs)


def _evaluate_in_process(
    args: argparse.Namespace,
    name: str,
    sources: list[CatalogSource],
    queries: list[LabeledQuery],
    retrievers: list[str],
    ks: tuple[int, ...],
    progress: bool,
) -> list[Report]:
    from indexer.embedding import load_embedder
    from indexer.retrieval.vector_index import one_thread_per_search

    one_thread_per_search()
    family = name.split(":")[0]
    db = Path(args.db) if args.db else DEFAULT_WORKDIR / f"{family}.db"
    store = Store(db)
    try:
        registry = Registry(
            store,
            load_embedder(Path(args.model) if args.model else None, args.embedder),
            query_cache_size=max(4_096, 2 * len(queries)),
            approximate_from=INDEX_MODES[args.index],
            result_cache_size=0,  # every query is asked once per retriever: nothing to reuse
            progress=progress,
        )
        registry.load()
        tools = load_catalogs(registry, sources)
        if any(r != "bm25" for r in retrievers):
            registry.warm_queries([q.query for q in queries], progress=progress)
        return [
            run(
                name,
                retriever,
                tools,
                queries,
                in_process_searcher(registry, retriever, max(ks), args.limit),
                ks=ks,
                progress=progress,
            )
            for retriever in retrievers
        ]
    finally:
        store.close()


def cmd_eval(args: argparse.Namespace) -> int:
    reports = evaluate_args(args)
    first = reports[0]
    cut = args.limit or DEFAULT_LIMIT
    print(f"{first.dataset}: {first.queries} queries, {first.tools} tools "
          f"(returned: limit {cut} and the registry's own cut)")  # fmt: skip
    print(format_table(reports))
    if first.none["queries"]:
        for report in reports:
            print(f"{report.retriever}: no-match queries {report.none['queries']}, flagged weak "
                  f"{report.none['flagged_weak']:.2%}; answerable flagged weak "
                  f"{report.none['false_weak_rate']:.2%}")  # fmt: skip
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
    if first.none["queries"]:
        lines.append(f"No-match queries: {first.none}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def _backend(value: str) -> str:
    # A type, not `choices`: argparse checks a type on the environment default too.
    if value not in BACKENDS:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a model backend; use one of {', '.join(BACKENDS)}"
        )
    return value


def add_embedder_option(parser: argparse.ArgumentParser) -> None:
    """--embedder (or CAPREG_EMBEDDER), shared by `serve` and `eval`."""
    parser.add_argument(
        "--embedder",
        type=_backend,
        default=os.environ.get("CAPREG_EMBEDDER", "onnx"),
        metavar="{" + ",".join(BACKENDS) + "}",
        help="model backend: ONNX Runtime (default), its int8 variant, or "
        "sentence-transformers on torch",
    )


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
