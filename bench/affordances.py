"""Tokens per completed travel task: a workflow state's affordances against a static tools/list.

    .venv/bin/python -m bench.affordances --out docs/results/affordances.md

Each scenario catalog (bench/scenarios/travel-7.yaml, travel-35.yaml) is registered into its
own real registry (SQLite in a temporary folder, the packaged embedder), and each scripted
task of bench/scenarios/travel_tasks.yaml is walked through its workflow the way
GetAffordances walks it: every step must be a legal move with arguments its tool accepts, and
the task must end in a terminal state, or the run stops naming the step.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from indexer.embedding import Embedder, load_embedder
from indexer.errors import CapregError
from indexer.evaluation.tokens import count_tokens
from indexer.formats import parse_catalog
from registry.core import ALL, Registry
from registry.proto import registry_pb2 as pb
from registry.rpc.servicer import affordances_response, tool_schema
from registry.store import SqliteStore

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
TASKS = SCENARIOS / "travel_tasks.yaml"
# Scenario -> (catalog file, the ratio the published 7- and 35-tool scenarios report).
PUBLISHED: dict[str, tuple[Path, float]] = {
    "travel-7": (SCENARIOS / "travel-7.yaml", 1.8),
    "travel-35": (SCENARIOS / "travel-35.yaml", 6.5),
}
COMMAND = ".venv/bin/python -m bench.affordances --out docs/results/affordances.md"


class ScriptError(CapregError):
    """A scenario or scripted task that does not hold: an illegal move, bad arguments, a task
    left unfinished, a catalog that registers with warnings."""


@dataclass(frozen=True, kw_only=True)
class Step:
    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Task:
    name: str
    request: str
    workflow: str
    steps: tuple[Step, ...]


@dataclass(frozen=True, kw_only=True)
class TaskCount:
    """One completed task's o200k tokens, both ways, and the states it went through."""

    task: str
    static: int
    affordances: int
    states: tuple[str, ...]
    offered: tuple[int, ...]  # tools offered on each turn with affordances

    @property
    def ratio(self) -> float:
        return self.static / self.affordances


@dataclass(frozen=True, kw_only=True)
class ScenarioCount:
    scenario: str
    tools: int
    published: float
    tasks: tuple[TaskCount, ...]

    @property
    def static(self) -> int:
        return sum(t.static for t in self.tasks)

    @property
    def affordances(self) -> int:
        return sum(t.affordances for t in self.tasks)

    @property
    def ratio(self) -> float:
        return self.static / self.affordances


def load_tasks(path: Path = TASKS) -> tuple[Task, ...]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    return tuple(
        Task(
            name=entry["name"],
            request=" ".join(entry["request"].split()),
            workflow=entry.get("workflow", document["workflow"]),
            steps=tuple(
                Step(tool=step["tool"], arguments=step.get("arguments", {}))
                for step in entry["steps"]
            ),
        )
        for entry in document["tasks"]
    )


def tokens(text: str) -> int:
    return count_tokens(text, "o200k_base")


def wire(value: object) -> str:
    """JSON as an MCP server sends it (pydantic's compact form, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def mcp_tool(schema: pb.ToolSchema) -> dict[str, Any]:
    """One tool definition as tools/list carries it."""
    definition: dict[str, Any] = {
        "name": schema.name,
        "description": schema.description,
        "inputSchema": json.loads(schema.input_schema),
    }
    if schema.output_schema:
        definition["outputSchema"] = json.loads(schema.output_schema)
    return definition


def tools_list(schemas: Sequence[pb.ToolSchema]) -> str:
    return wire({"tools": [mcp_tool(schema) for schema in schemas]})


def state_text(reply: pb.GetAffordancesResponse) -> str:
    """What the affordance answer says beyond the schemas: where the task is, where each
    move leads, and the arguments a move applies to."""
    moves = []
    for move in reply.affordances:
        entry: dict[str, Any] = {"tool": move.tool_id, "next_state": move.next_state}
        if move.when:
            entry["when"] = json.loads(move.when)
        moves.append(entry)
    return wire(
        {
            "workflow": reply.workflow,
            "state": reply.state,
            "terminal": reply.terminal,
            "moves": moves,
        }
    )


def offered_schemas(reply: pb.GetAffordancesResponse) -> list[pb.ToolSchema]:
    """Each offered tool once (a tool whose arguments decide its target is two moves)."""
    unique = {move.tool_id: move.schema for move in reply.affordances}
    return list(unique.values())


def get_affordances(
    registry: Registry, workflow: str, state: str = "", tool: str = "", arguments: str = ""
) -> pb.GetAffordancesResponse:
    """GetAffordances with with_schemas set, answered in process as the servicer answers it."""
    snapshot = registry.snapshot
    answer = snapshot.affordances(workflow, state, tool, ALL, arguments)
    schemas = snapshot.schemas(answer.tool_ids, ALL) if answer.moves else None
    return affordances_response(answer, schemas, snapshot.view_generation(ALL))


@contextmanager
def scenario_registry(catalog: Path, embedder: Embedder) -> Iterator[tuple[Registry, str]]:
    """A fresh registry holding only `catalog`, and the catalog's name."""
    with tempfile.TemporaryDirectory(prefix="capreg-affordances-") as folder:
        store = SqliteStore(Path(folder) / "registry.db")
        try:
            registry = Registry(store, embedder)
            registry.load()
            outcome = registry.register(catalog.read_text(encoding="utf-8"))
            if outcome.warnings:
                raise ScriptError(f"{catalog.name} registers with warnings: {outcome.warnings}")
            yield registry, outcome.catalog
        finally:
            store.close()


def count_task(
    registry: Registry, catalog: str, every_tool: Sequence[pb.ToolSchema], task: Task
) -> TaskCount:
    """Walks `task` through its workflow, one model turn per step plus a final answer."""
    schemas = {schema.name: schema for schema in every_tool}
    static_list = tokens(tools_list(every_tool))
    workflow = f"{catalog}/{task.workflow}"
    reply = get_affordances(registry, workflow)
    static = affordances = 0
    states, offered = [reply.state], []
    for number, step in enumerate(task.steps, start=1):
        where = f"task '{task.name}' step {number} ({step.tool} in state '{reply.state}')"
        if step.tool not in schemas:
            raise ScriptError(f"{where}: no tool '{step.tool}' in catalog '{catalog}'")
        try:
            jsonschema.validate(dict(step.arguments), json.loads(schemas[step.tool].input_schema))
        except jsonschema.ValidationError as exc:
            raise ScriptError(f"{where}: arguments the tool refuses: {exc.message}") from exc
        call = tokens(wire({"name": step.tool, "arguments": step.arguments}))
        legal = offered_schemas(reply)
        static += static_list + call
        affordances += tokens(tools_list(legal)) + tokens(state_text(reply)) + call
        offered.append(len(legal))
        try:
            reply = get_affordances(
                registry, workflow, reply.state, f"{catalog}/{step.tool}", wire(step.arguments)
            )
        except CapregError as exc:
            raise ScriptError(f"{where}: {exc}") from exc
        states.append(reply.state)
    if not reply.terminal:
        raise ScriptError(f"task '{task.name}' ends in state '{reply.state}', not a terminal one")
    # The final answer turn: the tools are still listed, the task is done.
    final = offered_schemas(reply)
    static += static_list
    affordances += tokens(tools_list(final)) + tokens(state_text(reply))
    offered.append(len(final))
    return TaskCount(
        task=task.name,
        static=static,
        affordances=affordances,
        states=tuple(states),
        offered=tuple(offered),
    )


def count_scenario(
    scenario: str, embedder: Embedder, tasks: Sequence[Task] | None = None
) -> ScenarioCount:
    path, published = PUBLISHED[scenario]
    tool_names = [tool.name for tool in parse_catalog(path.read_text(encoding="utf-8")).tools]
    with scenario_registry(path, embedder) as (registry, catalog):
        every_tool = [
            tool_schema(entry) for entry in registry.schemas([f"{catalog}/{n}" for n in tool_names])
        ]
        counts = tuple(
            count_task(registry, catalog, every_tool, task) for task in tasks or load_tasks()
        )
    return ScenarioCount(
        scenario=scenario, tools=len(every_tool), published=published, tasks=counts
    )


def report(scenarios: Sequence[ScenarioCount]) -> str:
    lines = [
        "# Tokens per completed task: workflow affordances vs a static tools/list",
        "",
        f"Command: `{COMMAND}` ({datetime.now(UTC):%Y-%m-%d})",
        "",
        "How counted: o200k_base tokens of exact JSON text (compact, as an MCP server sends "
        "it). Each scripted task in `bench/scenarios/travel_tasks.yaml` is one model turn per "
        "step plus a final answer turn. **Static**: every turn carries the catalog's whole "
        "tools/list (each tool's name, description, inputSchema and outputSchema) plus the "
        "step's call (`{name, arguments}`). **Affordances**: every turn carries only the tools "
        "legal in the current state of `trip_booking`, with the full schemas GetAffordances "
        "returns with `with_schemas` (same definition shape, each tool once), plus the "
        "answer's own text (`{workflow, state, terminal, moves: [{tool, next_state, when}]}`) "
        "and the same call; the state moves on by reporting each call (`tool` + `arguments`) "
        "to GetAffordances on a real registry, which refuses an illegal move. Conversation "
        "history and tool results are left out: they are the same both ways.",
        "",
        "| scenario | tools | task | steps | states | tools offered per turn | static tokens "
        "| affordance tokens | static / affordances |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for scenario in scenarios:
        for count in scenario.tasks:
            lines.append(
                f"| {scenario.scenario} | {scenario.tools} | {count.task} "
                f"| {len(count.states) - 1} | {' → '.join(_runs(count.states))} "
                f"| {', '.join(map(str, count.offered))} | {count.static:,} "
                f"| {count.affordances:,} | {count.ratio:.2f}x |"
            )
        lines.append(
            f"| **{scenario.scenario} total** | {scenario.tools} | {len(scenario.tasks)} tasks "
            f"| | | | **{scenario.static:,}** | **{scenario.affordances:,}** "
            f"| **{scenario.ratio:.2f}x** |"
        )
    lines += [
        "",
        "| scenario | tools | measured static / affordances | published |",
        "| --- | --- | --- | --- |",
        *(f"| {s.scenario} | {s.tools} | {s.ratio:.2f}x | {s.published:.1f}x |" for s in scenarios),
    ]
    return "\n".join(lines) + "\n"


def _runs(states: Sequence[str]) -> list[str]:
    """States in order with repeats folded (a lookup keeps the state)."""
    return [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the markdown report here")
    args = parser.parse_args()
    embedder = load_embedder()
    tasks = load_tasks()
    text = report([count_scenario(name, embedder, tasks) for name in PUBLISHED])
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
