"""What each bridge answer costs in o200k tokens: the shapes before decision 0055 and now.

    .venv/bin/python -m bench.bridge_payloads --out docs/results/bridge-payloads.md

Searches run the labeled tasks (limit 5) over the sample catalogs and, when the datasets
are there, over LiveMCPBench; every tool's schema is fetched alone. Then `capreg context`'s
run at 15 and 100 tools, once with each shape (the same draws), shows what the shapes change
in a session.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capreg.evaluation.context_cost import ContextPlan, ContextReport, Exchanges, run_context
from capreg.evaluation.runner import read_queries
from capreg.evaluation.sampler import Pool, dataset_pool, folder_pool
from indexer.embedding import load_embedder
from indexer.evaluation.datasets import LabeledQuery, load_dataset
from indexer.evaluation.tokens import count_tokens
from mcp_bridge import payloads
from mcp_bridge.accounting import BridgeExchanges, answer_text
from registry.config import SearchSettings
from registry.core import Registry
from registry.ingest.catalog_dir import sync_folder
from registry.proto import registry_pb2 as pb
from registry.rpc.servicer import search_response, tool_schema
from registry.store import SqliteStore

ROOT = Path(__file__).resolve().parent.parent
WORKDIR = ROOT / ".capreg" / "bench" / "bridge-payloads"
SAMPLE_TASKS = ROOT / "bench" / "data" / "sample-tasks.jsonl"
LIMIT = 5
Payload = dict[str, Any]


def tokens(text: str) -> int:
    return count_tokens(text, "o200k_base")


# -- the shapes before 0055 (commit 1d76153), kept here only to be measured ---------------


def before_hit(hit: pb.SearchHit) -> Payload:
    return {
        "id": hit.id,
        "name": hit.name,
        "summary": hit.summary,
        "score": round(hit.score, 3),
        "next_call": payloads.call(payloads.GET_TOOL_SCHEMA, ids=list(hit.next_call.ids)),
    }


def before_search(reply: pb.SearchResponse) -> str:
    hits = [before_hit(hit) for hit in reply.hits]
    payload: Payload = {"hits": hits, "weak_match": reply.weak_match}
    if not hits:
        payload["note"] = payloads.NO_MATCH
    elif reply.weak_match:
        payload["note"] = payloads.WEAK_MATCH
    return json.dumps(payload, ensure_ascii=False)


def before_schema(reply: pb.GetSchemaResponse) -> str:
    return json.dumps(
        {"tools": [payloads.tool_definition(tool) for tool in reply.tools]}, ensure_ascii=False
    )


class BeforeExchanges(BridgeExchanges):
    """The bridge's session text with the answers shaped as before."""

    def search(self, query: str, limit: int, reply: pb.SearchResponse) -> str:
        arguments = json.dumps({"query": query, "limit": limit}, ensure_ascii=False)
        return f"{arguments}\n{before_search(reply)}"

    def schemas(self, ids: Sequence[str], reply: pb.GetSchemaResponse) -> str:
        arguments = json.dumps({"ids": list(ids)}, ensure_ascii=False)
        return f"{arguments}\n{before_schema(reply)}"


# -- now -----------------------------------------------------------------------------------


def lean_json(reply: pb.SearchResponse) -> str:
    """The structured content now, as JSON text: what a client showing it would send."""
    return json.dumps(payloads.search_payload(reply), ensure_ascii=False, separators=(",", ":"))


def text_hit(hit: Payload) -> str:
    return payloads.search_text({"note": "", "hits": [hit]}).split("\n")[-1]


@dataclass(frozen=True, kw_only=True)
class Measured:
    corpus: str
    answers: dict[str, list[int]]  # shape -> tokens of each 5-hit answer
    hits: dict[str, list[int]]  # shape -> tokens of each hit's own entry
    schemas: dict[str, list[int]]  # shape -> tokens of each one-tool schema answer
    searches: int
    tools: int


SEARCH_SHAPES: dict[str, Callable[[pb.SearchResponse], str]] = {
    "before: JSON, next_call per hit, 3 decimals": before_search,
    "lean JSON (the structured content now)": lean_json,
    "now: compact text (what the model reads)": lambda r: answer_text(payloads.search_payload(r)),
}
HIT_SHAPES: dict[str, Callable[[pb.SearchHit], str]] = {
    "before: JSON, next_call per hit, 3 decimals": lambda h: json.dumps(
        before_hit(h), ensure_ascii=False
    ),
    "lean JSON (the structured content now)": lambda h: json.dumps(
        payloads.search_payload(pb.SearchResponse(hits=[h]))["hits"][0],
        ensure_ascii=False,
        separators=(",", ":"),
    ),
    "now: compact text (what the model reads)": lambda h: text_hit(
        payloads.search_payload(pb.SearchResponse(hits=[h]))["hits"][0]
    ),
}
SCHEMA_SHAPES: dict[str, Callable[[pb.GetSchemaResponse], str]] = {
    "before: JSON with spaces": before_schema,
    "now: JSON without spaces, one links note": lambda r: answer_text(payloads.schema_payload(r)),
}


def measure(corpus: str, registry: Registry, tasks: Sequence[LabeledQuery]) -> Measured:
    answers: dict[str, list[int]] = {shape: [] for shape in SEARCH_SHAPES}
    hits: dict[str, list[int]] = {shape: [] for shape in HIT_SHAPES}
    for task in tasks:
        reply = search_response(registry.search(task.query, LIMIT))
        if len(reply.hits) != LIMIT:
            continue
        for shape, render in SEARCH_SHAPES.items():
            answers[shape].append(tokens(render(reply)))
        for shape, render_hit in HIT_SHAPES.items():
            hits[shape].extend(tokens(render_hit(hit)) for hit in reply.hits)
    schemas: dict[str, list[int]] = {shape: [] for shape in SCHEMA_SHAPES}
    ids = [entry.id for entry in registry.index.entries]
    for tool_id in ids:
        reply_schema = pb.GetSchemaResponse(
            tools=[tool_schema(e) for e in registry.schemas([tool_id])]
        )
        for shape, render_schema in SCHEMA_SHAPES.items():
            schemas[shape].append(tokens(render_schema(reply_schema)))
    return Measured(
        corpus=corpus,
        answers=answers,
        hits=hits,
        schemas=schemas,
        searches=len(next(iter(answers.values()))),
        tools=len(ids),
    )


def sample_registry(db: Path) -> tuple[Registry, list[LabeledQuery]]:
    registry = Registry(SqliteStore(db), load_embedder(), settings=SearchSettings())
    registry.load()
    report = sync_folder(registry, ROOT / "catalogs")
    if report.failed:
        raise SystemExit(f"bridge_payloads: catalogs failed: {report.failed}")
    return registry, read_queries(SAMPLE_TASKS)


def livemcpbench_registry(db: Path, root: str) -> tuple[Registry, list[LabeledQuery]]:
    dataset = load_dataset("livemcpbench", root)
    registry = Registry(SqliteStore(db), load_embedder(), settings=SearchSettings())
    registry.load()
    with registry.bulk():
        for source in dataset.catalogs:
            registry.register(source.content, name=source.name, fmt=source.format)
    return registry, list(dataset.queries)


def mean(values: Sequence[int]) -> str:
    return f"{statistics.fmean(values):,.1f}" if values else "—"


def change(before: Sequence[int], after: Sequence[int]) -> str:
    if not before or not after:
        return "—"
    return f"{statistics.fmean(after) / statistics.fmean(before) - 1:+.1%}"


def report(results: Sequence[Measured]) -> list[str]:
    lines = []
    for m in results:
        search_before = next(iter(SEARCH_SHAPES))
        schema_before = next(iter(SCHEMA_SHAPES))
        lines += [
            f"## {m.corpus}",
            "",
            f"{m.searches} searches with 5 hits; {m.tools} tools, each schema fetched alone.",
            "",
            "| search answer shape | tokens / 5-hit answer | tokens / hit entry "
            "| answer vs before |",
            "| --- | --- | --- | --- |",
            *(
                f"| {shape} | {mean(m.answers[shape])} | {mean(m.hits[shape])} | "
                f"{change(m.answers[search_before], m.answers[shape])} |"
                for shape in SEARCH_SHAPES
            ),
            "",
            "| schema answer shape | tokens / one-tool answer (mean) | median | vs before |",
            "| --- | --- | --- | --- |",
            *(
                f"| {shape} | {mean(m.schemas[shape])} | "
                f"{statistics.median(m.schemas[shape]) if m.schemas[shape] else '—'} | "
                f"{change(m.schemas[schema_before], m.schemas[shape])} |"
                for shape in SCHEMA_SHAPES
            ),
            "",
        ]
    return lines


SESSION_SIZES = (15, 100)
TURNS = (1, 5, 10)


def sessions(pools: Sequence[tuple[str, Pool]]) -> list[str]:
    """Reduction per size and session length, with the answers shaped before and now."""
    lines = [
        "## In a session (`capreg context`'s run, the same draws for both shapes)",
        "",
        "| tasks over | tools | turns | reduction, before | reduction, now "
        "| discovery tokens / task, before → now | needed tools found |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    plan = ContextPlan(sizes=SESSION_SIZES)
    for label, pool in pools:
        shaped: dict[str, ContextReport] = {}
        shapes: dict[str, Exchanges] = {"before": BeforeExchanges(), "now": BridgeExchanges()}
        for shape, exchanges in shapes.items():
            shaped[shape] = run_context(plan, pool, exchanges)
        for before, now in zip(shaped["before"].results, shaped["now"].results, strict=True):
            found, needed = now.found
            for n in TURNS:
                lines.append(
                    f"| {label} | {now.size} | {n} | {before.reduction(n):.1%} | "
                    f"{now.reduction(n):.1%} | {before.discovery(n):,.0f} → "
                    f"{now.discovery(n):,.0f} | {found / needed:.1%} |"
                )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--datasets", default=os.environ.get("CAPREG_DATASETS"), help="folder")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    WORKDIR.mkdir(parents=True, exist_ok=True)
    results = []
    registry, tasks = sample_registry(WORKDIR / "sample.db")
    results.append(measure("Sample catalogs (catalogs/, 48 labeled tasks)", registry, tasks))
    root = args.datasets or str(ROOT.parent / "shared" / "datasets")
    if Path(root, "livemcpbench").is_dir():
        registry, tasks = livemcpbench_registry(WORKDIR / "livemcpbench.db", root)
        results.append(measure("LiveMCPBench (94 tasks)", registry, tasks))
    else:
        print(f"bridge_payloads: no livemcpbench in {root}; sample catalogs only", file=sys.stderr)
    pools = [("sample catalogs", folder_pool(ROOT / "catalogs", SAMPLE_TASKS))]
    if Path(root, "livemcpbench").is_dir():
        pools.append(("the datasets (as `capreg context`)", dataset_pool(root)))
    lines = [
        "# Bridge answers in o200k tokens: before and after decision 0055",
        "",
        "Command: `.venv/bin/python -m bench.bridge_payloads --out "
        f"docs/results/bridge-payloads.md` ({datetime.now(UTC):%Y-%m-%d})",
        "",
        "A hit entry is one hit's own part of the answer (its JSON object, or its line); an "
        "answer adds the note, the header and the brackets. Before = the bridge at commit "
        "1d76153.",
        "",
        *report(results),
        *sessions(pools),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
