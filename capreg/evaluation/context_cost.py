"""Context-token runs (`capreg context`): labeled tasks over catalogs of chosen sizes, every
tool definition in every turn against discovery, per turn and per session.

The discovery side's text comes from an `Exchanges` the caller passes (the MCP bridge's, in
`capreg context`), so the registry never imports the bridge that sits above it.
"""

from __future__ import annotations

import functools
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from capreg.evaluation.sampler import Fields, Pool, PoolTool, catalog_sources, with_variants
from indexer.embedding import EmbedderBackend, load_embedder
from indexer.evaluation.datasets import LabeledQuery
from indexer.evaluation.tokens import Encoding, count_tokens
from indexer.naming import function_name
from registry.config import SearchSettings
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.rpc.servicer import search_response, tool_schema
from registry.store import SqliteStore

SIZES = (15, 100, 1_000, 10_000)
# Small catalogs vary more from draw to draw, so they are drawn more often.
ROUNDS = {15: 40, 100: 10, 1_000: 2, 10_000: 1}
MAX_TASKS_PER_ROUND = 40
DEFAULT_DB = Path(".capreg") / "context.db"


class Exchanges(Protocol):
    """The text a discovery client puts in the model's context."""

    def tools_list(self) -> str:
        """The discovery tools' own definitions, sent on every turn."""
        ...

    def search(self, query: str, limit: int, reply: pb.SearchResponse) -> str:
        """A search call's arguments and its answer."""
        ...

    def schemas(self, ids: Sequence[str], reply: pb.GetSchemaResponse) -> str:
        """A schema call's arguments and its answer."""
        ...


@dataclass(frozen=True, kw_only=True)
class ContextPlan:
    """One context run, as the CLI read it."""

    db: Path = DEFAULT_DB
    sizes: tuple[int, ...] = SIZES
    seed: int = 7
    limit: int = 5
    # Catalogs drawn per size; 0: by size (ROUNDS).
    rounds: int = 0
    encoding: Encoding = "o200k_base"
    model: Path | None = None
    model_cache: Path | None = None
    embedder: EmbedderBackend = EmbedderBackend.ONNX
    progress: bool = False


@dataclass(frozen=True, kw_only=True)
class TaskCost:
    """One task's tokens: a turn of every definition (static), a turn of the discovery
    tools' definitions (bridge), the calls made once (discovery), and the needed tools."""

    static: int
    bridge: int
    discovery: int
    needed: int
    found: int


@dataclass(frozen=True, kw_only=True)
class SizeResult:
    size: int
    costs: tuple[TaskCost, ...]

    @property
    def tasks(self) -> int:
        return len(self.costs)

    def static(self, turns: int) -> float:
        """Tokens per task when every definition is re-sent on each of `turns` turns."""
        return turns * sum(c.static for c in self.costs) / max(self.tasks, 1)

    def discovery(self, turns: int) -> float:
        """Tokens per task: the discovery tools on each turn, each call and schema once."""
        return sum(turns * c.bridge + c.discovery for c in self.costs) / max(self.tasks, 1)

    def reduction(self, turns: int) -> float:
        static = self.static(turns)
        return 1 - self.discovery(turns) / static if static else 0.0

    @property
    def found(self) -> tuple[int, int]:
        """(needed tools the searches found, needed tools), over every task."""
        return sum(c.found for c in self.costs), sum(c.needed for c in self.costs)


@dataclass(frozen=True, kw_only=True)
class ContextReport:
    origin: str
    limit: int
    encoding: Encoding
    bridge: int
    results: tuple[SizeResult, ...]


def rounds_for(size: int) -> int:
    return ROUNDS.get(size, max(1, min(40, 1_000 // size)))


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


def run_task(
    registry: Registry,
    task: LabeledQuery,
    exchanges: Exchanges,
    *,
    limit: int,
    count: Callable[[str], int],
) -> tuple[int, int]:
    """One task's discovery tokens (its search, then the schemas of the needed tools the
    search found, fetched in one call) and how many needed tools the search found."""
    reply = search_response(registry.search(task.query, limit))
    tokens = count(exchanges.search(task.query, limit, reply))
    needed = [hit.id for hit in reply.hits if hit.id in task.relevant]
    if needed:
        schemas = pb.GetSchemaResponse(tools=[tool_schema(e) for e in registry.schemas(needed)])
        tokens += count(exchanges.schemas(needed, schemas))
    return tokens, len(needed)


def pick_tasks(
    rng: random.Random,
    tasks: Sequence[LabeledQuery],
    by_id: dict[str, PoolTool],
    size: int,
    *,
    most: int = MAX_TASKS_PER_ROUND,
) -> tuple[list[LabeledQuery], set[str]]:
    """At most `most` tasks whose needed tools fill at most a third of the catalog."""
    chosen: list[LabeledQuery] = []
    gold: set[str] = set()
    for task in rng.sample(list(tasks), len(tasks)):
        needed = {g for g in task.relevant if g in by_id}
        if needed != task.relevant or len(gold | needed) > max(size // 3, 1):
            continue
        chosen.append(task)
        gold |= needed
        if len(chosen) >= most:
            break
    return chosen, gold


def load(registry: Registry, tools: Sequence[PoolTool], fields: Fields = "core") -> None:
    """Makes the registry hold exactly these tools."""
    sources = catalog_sources(tools, fields=fields)
    names = {name for name, _ in sources}
    with registry.bulk():
        for catalog in registry.catalogs():
            if catalog.name not in names:
                registry.delete(catalog.name)
        for name, content in sources:
            registry.register(content, name=name, fmt="native")


def measure_size(
    registry: Registry,
    pool: Pool,
    exchanges: Exchanges,
    size: int,
    *,
    bridge: int,
    rng: random.Random,
    plan: ContextPlan,
) -> SizeResult:
    """Rounds of catalogs of `size` tools, each holding the needed tools of the tasks run on
    it and a random draw of others; `bridge` is the tokens of the discovery tools' list."""
    count = functools.partial(count_tokens, encoding=plan.encoding)
    by_id = {item.tool.id: item for item in pool.tools}
    # Room to spare: copies of the needed tools are left out of the draw below.
    universe = with_variants(pool.tools, size + size // 5)
    costs: list[TaskCost] = []
    rounds, most = plan.rounds or rounds_for(size), MAX_TASKS_PER_ROUND
    if size == len(pool.tools):  # every draw is the whole pool: one round runs every task
        rounds, most = 1, len(pool.tasks)
    for _ in range(rounds):
        chosen, gold = pick_tasks(rng, pool.tasks, by_id, size, most=most)
        if not chosen:
            continue
        # A copy of a needed tool would be indistinguishable from it: keep copies out.
        rest = [i for i in universe if i.source not in gold]
        tools = [by_id[g] for g in sorted(gold)] + rng.sample(rest, size - len(gold))
        load(registry, tools, pool.fields)
        static = static_tokens(tools, plan.encoding)
        for task in chosen:
            discovery, found = run_task(registry, task, exchanges, limit=plan.limit, count=count)
            costs.append(
                TaskCost(
                    static=static,
                    bridge=bridge,
                    discovery=discovery,
                    needed=len(task.relevant),
                    found=found,
                )
            )
    return SizeResult(size=size, costs=tuple(costs))


def measure(
    registry: Registry, pool: Pool, exchanges: Exchanges, plan: ContextPlan
) -> ContextReport:
    rng = random.Random(plan.seed)  # noqa: S311 -- draws catalogs to measure, not secrets
    bridge = count_tokens(exchanges.tools_list(), plan.encoding)
    results = []
    for size in plan.sizes:
        result = measure_size(registry, pool, exchanges, size, bridge=bridge, rng=rng, plan=plan)
        if plan.progress:
            print(f"{size:,} tools: {result.reduction(1):.1%} in one turn", file=sys.stderr)
        results.append(result)
    return ContextReport(
        origin=pool.origin,
        limit=plan.limit,
        encoding=plan.encoding,
        bridge=bridge,
        results=tuple(results),
    )


def run_context(plan: ContextPlan, pool: Pool, exchanges: Exchanges) -> ContextReport:
    """The run in a registry of its own (`plan.db`; embeddings stored there are reused)."""
    plan.db.parent.mkdir(parents=True, exist_ok=True)
    store = SqliteStore(plan.db)
    try:
        embedder = load_embedder(plan.model, plan.embedder, cache_dir=plan.model_cache)
        registry = Registry(
            store,
            embedder,
            settings=SearchSettings(result_cache_size=0),
            progress=plan.progress,
        )
        registry.load()
        return measure(registry, pool, exchanges, plan)
    finally:
        store.close()


def table(report: ContextReport, turns: int) -> list[str]:
    """Markdown rows: per size, tokens per task over a session of `turns` turns."""
    unit = "task" if turns == 1 else f"{turns}-turn session"
    lines = [
        f"| tools | tasks | static tokens / {unit} | discovery tokens / {unit} | reduction "
        "| needed tools found |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for result in report.results:
        found, needed = result.found
        share = f"{found / needed:.1%} ({found:,} of {needed:,})" if needed else "—"
        lines.append(
            f"| {result.size:,} | {result.tasks} | {result.static(turns):,.0f} | "
            f"{result.discovery(turns):,.0f} | {result.reduction(turns):.1%} | {share} |"
        )
    return lines


def markdown(report: ContextReport, turns: Sequence[int]) -> list[str]:
    """The report's tables: one turn, then a session of each length in `turns`."""
    lines = [
        f"Tasks and tools: {report.origin}. Per task, static = every tool definition of the "
        "catalog (OpenAI function form); discovery = the discovery tools' own definitions "
        f"({report.bridge:,} tokens) + one search_tools call and its answer (limit "
        f"{report.limit}) + one get_tool_schema call and its answer for the needed tools the "
        f"search found. Tokens: {report.encoding}, on the exact text sent.",
        "",
        "## One turn",
        "",
        *table(report, 1),
    ]
    for n in turns:
        if n == 1:
            continue
        lines += [
            "",
            f"## A session of {n} turns",
            "",
            f"Static re-sends every definition on each of the {n} turns; discovery re-sends "
            "its own tool definitions on each turn and counts each search answer and fetched "
            "schema once.",
            "",
            *table(report, n),
        ]
    return lines
