"""Tokens per completed task: state-filtered affordances against a static tools/list.

    .venv/bin/python -m bench.affordances --out docs/results/affordances.md

The scenario (bench/travel/): one travel-booking domain as a 7-tool catalog and widened to 35
tools, both with the same `trip_booking` workflow, and scripted tasks (tasks.yaml) whose every
step must be a legal move: the script walks them through a real registry's GetAffordances and
stops with an error at the first illegal one.

Each step of a task is one model turn, plus a final turn for the answer. What a turn carries:
- static: every tool of the catalog as a function definition (name, description, parameters),
  as an MCP client hands a static tools/list to the model;
- affordances: the tools legal in the task's current state as function definitions (from
  GetAffordances with their schemas), and the state line that says where each move leads.
Both sides also carry the step's call (tool name and arguments); tool results are the same on
both sides and are left out. o200k tokens on the exact JSON text.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from indexer.embedding import load_embedder
from indexer.evaluation.tokens import count_tokens
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.servicer import affordances_response, tool_schema
from registry.store import SqliteStore

SCENARIO = Path(__file__).resolve().parent / "travel"
CATALOGS = {7: SCENARIO / "travel-7.yaml", 35: SCENARIO / "travel-35.yaml"}
WORKFLOW = "trip_booking"
# The published comparison this scenario follows: tokens cut 1.8x at 7 tools, 6.5x at 35.
PUBLISHED = {7: 1.8, 35: 6.5}


@dataclass(frozen=True, kw_only=True)
class TaskCost:
    task: str
    turns: int
    static: int
    affordances: int

    @property
    def ratio(self) -> float:
        return self.static / self.affordances


def tokens(value: object) -> int:
    return count_tokens(json.dumps(value, ensure_ascii=False), "o200k_base")


def function(schema: pb.ToolSchema) -> dict[str, object]:
    return {
        "type": "function",
        "function": {
            "name": schema.function_name,
            "description": schema.description,
            "parameters": json.loads(schema.input_schema),
        },
    }


def state_line(reply: pb.GetAffordancesResponse) -> dict[str, object]:
    """What the affordance answer says beside the definitions: the state and where each
    move leads."""
    return {
        "workflow": reply.workflow,
        "state": reply.state,
        "moves": [{"tool": a.function_name, "next_state": a.next_state} for a in reply.affordances],
    }


def walk(registry: Registry, catalog: str, steps: list[str]) -> list[pb.GetAffordancesResponse]:
    """The affordances of each turn: the initial state's, then those after each move. A
    step that is not a legal move raises (the registry's IllegalMove)."""
    snapshot = registry.snapshot
    workflow = f"{catalog}/{WORKFLOW}"

    def answer(state: str, tool: str = "") -> pb.GetAffordancesResponse:
        moves = snapshot.affordances(workflow, state, f"{catalog}/{tool}" if tool else "")
        schemas = snapshot.schemas(list(moves.tool_ids)) if moves.moves else []
        return affordances_response(moves, schemas, snapshot.generation)

    turns = [answer("")]
    for step in steps:
        turns.append(answer(turns[-1].state, step))
    return turns


def measure(registry: Registry, size: int, tasks: list[dict[str, object]]) -> list[TaskCost]:
    catalog = registry.register(CATALOGS[size].read_text(encoding="utf-8")).catalog
    every = [
        function(tool_schema(e)) for e in registry.snapshot.schemas(all_ids(registry, catalog))
    ]
    static_turn = tokens(every)
    costs = []
    for task in tasks:
        steps = [str(step) for step in task["steps"]]  # type: ignore[attr-defined]
        turns = walk(registry, catalog, steps)
        calls = sum(tokens({"tool": step, "arguments": {}}) for step in steps)
        offered = sum(
            tokens([function(a.schema) for a in reply.affordances]) + tokens(state_line(reply))
            for reply in turns
        )
        costs.append(
            TaskCost(
                task=str(task["task"]),
                turns=len(turns),
                static=static_turn * len(turns) + calls,
                affordances=offered + calls,
            )
        )
    return costs


def all_ids(registry: Registry, catalog: str) -> list[str]:
    return [e.id for e in registry.snapshot.index.entries if e.tool.catalog == catalog]


def report(results: dict[int, list[TaskCost]]) -> str:
    lines = [
        "# Affordances: tokens per completed task against a static tools/list",
        "",
        "Command: `.venv/bin/python -m bench.affordances --out docs/results/affordances.md` "
        f"({datetime.now(UTC):%Y-%m-%d}). Scenario: `bench/travel/` (a 7-tool and a 35-tool "
        "travel catalog with the same `trip_booking` workflow, and the scripted tasks of "
        "`tasks.yaml`).",
        "",
        "How counted: each step is one model turn, plus one for the answer. Static carries "
        "every tool of the catalog as a function definition on every turn; affordances carry "
        "the tools legal in the current state (GetAffordances with schemas) and the state "
        "line saying where each move leads. Both carry each step's call; tool results, equal "
        "on both sides, are left out. o200k tokens.",
        "",
        "| tools | task | turns | static tokens | affordance tokens | static / affordances |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for size, costs in results.items():
        for cost in costs:
            lines.append(
                f"| {size} | {cost.task} | {cost.turns} | {cost.static:,} | "
                f"{cost.affordances:,} | {cost.ratio:.1f}x |"
            )
    lines += [
        "",
        "| tools | static tokens | affordance tokens | cut | published |",
        "| --- | --- | --- | --- | --- |",
    ]
    for size, costs in results.items():
        static = sum(c.static for c in costs)
        offered = sum(c.affordances for c in costs)
        lines.append(
            f"| {size} | {static:,} | {offered:,} | {static / offered:.1f}x | {PUBLISHED[size]}x |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tasks = yaml.safe_load((SCENARIO / "tasks.yaml").read_text(encoding="utf-8"))
    embedder = load_embedder()
    results = {}
    with tempfile.TemporaryDirectory(prefix="capreg-affordances-") as folder:
        for size in CATALOGS:
            store = SqliteStore(Path(folder) / f"travel-{size}.db")
            registry = Registry(store, embedder)
            registry.load()
            results[size] = measure(registry, size, tasks)
            store.close()
    text = report(results)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
