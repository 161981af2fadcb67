"""Tokens an agent carries with every schema loaded vs with discovery (`make context`).

For catalogs of 15 to 10,000 tools drawn from the shared datasets, each labeled task is run
the way an agent using the bridge would: one search_tools call with the task text (limit 5,
the bridge's default), then get_tool_schema for the needed tools that the search actually
found. Static = every tool definition in every turn. Tokens are counted on the exact JSON
the bridge sends and receives.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from indexer.evaluation.datasets import LabeledQuery, load_dataset
from indexer.evaluation.tokens import ENCODINGS, Encoding, count_tokens
from indexer.formats import parse_catalog
from indexer.model import Tool
from indexer.naming import function_name
from registry.config import SearchSettings
from registry.core import Registry
from registry.evaluate import EvalError
from registry.proto import registry_pb2 as pb
from registry.servicer import search_response, tool_schema
from registry.store import SqliteStore

SIZES = (15, 100, 1_000, 10_000)
ROUNDS = {15: 40, 100: 10, 1_000: 2, 10_000: 1}
TASK_SOURCES = ("livemcpbench", "stabletoolbench")
POOL_SOURCES = ("livemcpbench", "stabletoolbench", "seal-tools:dev", "metatool")
SEARCH_LIMIT = 5
MAX_TASKS_PER_ROUND = 40


@dataclass(frozen=True)
class PoolTool:
    tool: Tool
    title: str
    description: str
    # The id of the tool this one copies (its own id for an original).
    origin: str = ""

    @property
    def source(self) -> str:
        return self.origin or self.tool.id


@dataclass
class SizeResult:
    size: int
    tasks: int = 0
    static: int = 0
    discovery: int = 0
    gold: int = 0
    found: int = 0

    def row(self) -> str:
        reduction = 1 - self.discovery / self.static if self.static else 0.0
        return (
            f"| {self.size:,} | {self.tasks} | {self.static / self.tasks:,.0f} | "
            f"{self.discovery / self.tasks:,.0f} | {reduction:.1%} | {self.found / self.gold:.1%} |"
        )


def load_pool(root: str | None) -> tuple[list[PoolTool], list[LabeledQuery]]:
    """Every tool of the pool datasets (unique ids) and the labeled tasks to run."""
    tools: dict[str, PoolTool] = {}
    tasks: list[LabeledQuery] = []
    for name in POOL_SOURCES:
        dataset = load_dataset(name, root)
        for source in dataset.catalogs:
            catalog = parse_catalog(source.content, name=source.name, fmt=source.format)
            for tool in catalog.tools:
                tools.setdefault(
                    tool.id, PoolTool(tool, catalog.title or catalog.name, catalog.description)
                )
        if name in TASK_SOURCES:
            tasks.extend(q for q in dataset.queries if q.relevant)
    return list(tools.values()), tasks


def with_variants(pool: list[PoolTool], size: int) -> list[PoolTool]:
    """The pool, grown past `size` with copies under mirror catalogs when it is smaller.

    A mirror keeps the original's title, so its document text (and stored embedding) is
    the same; only the id differs, as for the same server deployed twice.
    """
    grown = list(pool)
    copy = 1
    while len(grown) < size:
        for item in pool:
            if len(grown) >= size:
                break
            tool = item.tool
            mirror = Tool(**{**tool.__dict__, "catalog": f"{tool.catalog[:58]}-m{copy}"})
            grown.append(PoolTool(mirror, item.title, item.description, item.tool.id))
        copy += 1
    return grown


def catalog_sources(tools: Sequence[PoolTool]) -> list[tuple[str, str]]:
    """(name, native catalog text) for the chosen tools, grouped by catalog."""
    groups: dict[str, list[PoolTool]] = {}
    for item in tools:
        groups.setdefault(item.tool.catalog, []).append(item)
    sources = []
    for name, items in groups.items():
        document = {
            "capreg": 1,
            "name": name,
            "title": items[0].title,
            "description": items[0].description or items[0].title,
            "tools": [
                {
                    "name": i.tool.name,
                    "description": i.tool.description,
                    "input_schema": i.tool.input_schema,
                    **({"output_schema": i.tool.output_schema} if i.tool.output_schema else {}),
                }
                for i in items
            ],
        }
        sources.append((name, json.dumps(document, ensure_ascii=False)))
    return sources


def static_tokens(tools: Sequence[PoolTool], encoding: Encoding) -> int:
    """Every tool as an OpenAI-style function definition in one tools list.

    Counted per definition (plus one token for each separator): the tokenizer refuses
    megabyte inputs, and JSON boundaries merge no tokens across definitions.
    """
    total = 2  # the list's brackets
    for item in tools:
        definition = {
            "type": "function",
            "function": {
                "name": function_name(item.tool.catalog, item.tool.name),
                "description": item.tool.description,
                "parameters": item.tool.input_schema,
            },
        }
        total += count_tokens(json.dumps(definition, ensure_ascii=False), encoding) + 1
    return total


def bridge_tools_tokens(encoding: Encoding) -> int:
    """The bridge's own tools/list payload, as a client sends it to the model."""
    from mcp_bridge.server import build_server, static_key
    from registry.client import AsyncRegistryClient, RegistryTarget

    async def listed() -> list[Any]:
        # Listing tools never calls the registry: the client is only needed to build it.
        server = build_server(
            AsyncRegistryClient(RegistryTarget(address="127.0.0.1:9")), static_key(None)
        )
        return [
            t.model_dump(by_alias=True, exclude_none=True, mode="json")
            for t in await server.list_tools()
        ]

    return count_tokens(json.dumps({"tools": asyncio.run(listed())}, ensure_ascii=False), encoding)


def run_task(registry: Registry, task: LabeledQuery, encoding: Encoding) -> tuple[int, int]:
    """Discovery tokens for one task (search + schemas of what was needed and found),
    and how many needed tools the search found."""
    from mcp_bridge import payloads

    outcome = registry.search(task.query, SEARCH_LIMIT)
    search_call = json.dumps({"query": task.query, "limit": SEARCH_LIMIT}, ensure_ascii=False)
    found_payload = payloads.search_payload(search_response(outcome))
    tokens = count_tokens(search_call, encoding)
    tokens += count_tokens(json.dumps(found_payload, ensure_ascii=False), encoding)
    needed = [h.entry.id for h in outcome.hits if h.entry.id in task.relevant]
    if needed:
        schemas = pb.GetSchemaResponse(tools=[tool_schema(e) for e in registry.schemas(needed)])
        tokens += count_tokens(json.dumps({"ids": needed}), encoding)
        schema_text = json.dumps(payloads.schema_payload(schemas), ensure_ascii=False)
        tokens += count_tokens(schema_text, encoding)
    return tokens, len(needed)


def measure(
    registry: Registry,
    pool: list[PoolTool],
    tasks: list[LabeledQuery],
    encoding: Encoding,
    seed: int,
) -> list[SizeResult]:
    rng = random.Random(seed)
    by_id = {item.tool.id: item for item in pool}
    bridge = bridge_tools_tokens(encoding)
    results = []
    for size in SIZES:
        result = SizeResult(size)
        # Room to spare: copies of the needed tools are left out of the draw below.
        universe = with_variants(pool, size + size // 5)
        for _ in range(ROUNDS[size]):
            chosen, gold = pick_tasks(rng, tasks, by_id, size)
            # A copy of a needed tool would be indistinguishable from it: keep copies out.
            rest = [i for i in universe if i.source not in gold]
            tools = [by_id[g] for g in sorted(gold)] + rng.sample(rest, size - len(gold))
            load(registry, tools)
            static = static_tokens(tools, encoding)
            for task in chosen:
                tokens, found = run_task(registry, task, encoding)
                result.tasks += 1
                result.static += static
                result.discovery += bridge + tokens
                result.gold += len(task.relevant)
                result.found += found
        print(result.row(), file=sys.stderr)
        results.append(result)
    return results


def pick_tasks(
    rng: random.Random, tasks: list[LabeledQuery], by_id: dict[str, PoolTool], size: int
) -> tuple[list[LabeledQuery], set[str]]:
    """Tasks whose needed tools fill at most a third of the catalog (at least one task)."""
    chosen: list[LabeledQuery] = []
    gold: set[str] = set()
    for task in rng.sample(tasks, len(tasks)):
        needed = {g for g in task.relevant if g in by_id}
        if needed != task.relevant or len(gold | needed) > max(size // 3, 1):
            continue
        chosen.append(task)
        gold |= needed
        if len(chosen) >= MAX_TASKS_PER_ROUND:
            break
    return chosen, gold


def load(registry: Registry, tools: Sequence[PoolTool]) -> None:
    sources = catalog_sources(tools)
    names = {name for name, _ in sources}
    with registry.bulk():
        for catalog in registry.catalogs():
            if catalog.name not in names:
                registry.delete(catalog.name)
        for name, content in sources:
            registry.register(content, name=name, fmt="native")


def cmd_context(args: argparse.Namespace) -> int:
    from indexer.embedding import load_embedder

    try:
        pool, tasks = load_pool(args.datasets)
    except (ValueError, FileNotFoundError) as exc:
        raise EvalError(str(exc)) from exc
    store = SqliteStore(Path(args.db))
    try:
        registry = Registry(
            store,
            load_embedder(),
            settings=SearchSettings(result_cache_size=0),
            progress=sys.stderr.isatty(),
        )
        registry.load()
        results = measure(registry, pool, tasks, args.encoding, args.seed)
    finally:
        store.close()
    lines = [
        "# Context tokens: every schema in every turn vs discovery",
        "",
        "Command: `python -m bench.context_tokens "
        f"--encoding {args.encoding} --seed {args.seed}`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}. Tasks: labeled LiveMCPBench and StableToolBench "
        f"queries; tools drawn from {', '.join(POOL_SOURCES)} (mirror copies past the pool's "
        f"{len(pool):,} unique tools). Per task, static = every tool definition of the catalog; "
        "discovery = the bridge's three tool definitions + one search_tools call and its "
        f"result (limit {SEARCH_LIMIT}) + get_tool_schema for the needed tools the search found. "
        f"Tokens: {args.encoding}. Reference claim: 86.3% reduction at 15 tools, 97.2% at 100.",
        "",
        "| tools | tasks | static tokens / task | discovery tokens / task | reduction "
        "| needed tools found |",
        "| --- | --- | --- | --- | --- | --- |",
        *(r.row() for r in results),
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.context_tokens",
        description="tokens carried: every schema in every turn vs discovery",
    )
    parser.add_argument("--encoding", choices=ENCODINGS, default="o200k_base")
    parser.add_argument("--datasets", default=os.environ.get("CAPREG_DATASETS"), help="folder")
    parser.add_argument("--db", default=str(Path(".capreg") / "context.db"), help="SQLite file")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(Path("docs") / "results" / "context.md"))
    args = parser.parse_args(argv)
    try:
        return cmd_context(args)
    except EvalError as exc:
        print(f"context_tokens: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
