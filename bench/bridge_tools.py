"""What the bridge's tools/list costs in o200k tokens, as built and with affordances as a tool.

The bridge may expose affordances as a fourth discovery tool only if tools/list stays within
the 450-token budget (decision 0022); otherwise they ride in search_tools' arguments. Each
row gives the wire size (the budget's measure) and the size of the function definitions a
client hands the model, the form `capreg context` counts on every turn of a session:

    .venv/bin/python -m bench.bridge_tools --out docs/results/bridge-tools.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult

from indexer.evaluation.tokens import count_tokens
from mcp_bridge.server import build_server, discovery_tool, discovery_tools, static_key
from registry.client import AsyncRegistryClient, RegistryTarget

BUDGET = 450
# The fourth tool as it would have to be written: the fewest words that still tell a model
# when to call it and what it returns.
AFFORDANCES_TOOL = "get_affordances"
AFFORDANCES_DESCRIPTION = (
    "Tools legal in a workflow's current state (workflows: list_catalogs), each with the "
    "state it leads to. Call it after each step."
)


async def _get_affordances(
    workflow: str, ctx: Context[Any, Any], state: str = ""
) -> CallToolResult:
    raise NotImplementedError("only listed, never called")


Row = tuple[str, int, int, list[str]]


async def tools_list_tokens(server: MCPServer) -> tuple[int, int, list[str]]:
    """Tokens of tools/list as sent, and of the same tools as function definitions."""
    # As mcp_bridge.accounting lists them, so the per-turn figure is the one it counts.
    listed = [
        tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        for tool in await server.list_tools()
    ]
    wire = {"tools": listed}
    text = json.dumps(wire, ensure_ascii=False)
    definitions = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["inputSchema"],
            },
        }
        for t in wire["tools"]
    ]
    functions = json.dumps(definitions, ensure_ascii=False)
    return (
        count_tokens(text, "o200k_base"),
        count_tokens(functions, "o200k_base"),
        [t["name"] for t in wire["tools"]],
    )


async def measure() -> list[Row]:
    # No call reaches the registry: listing tools is the bridge's own answer.
    target = RegistryTarget(address="127.0.0.1:9", timeout=1.0)
    async with AsyncRegistryClient(target) as registry:
        built = build_server(registry, static_key(None))
        as_built = await tools_list_tokens(built)
        # The fourth tool written the way the bridge writes its own (lean advertised schema).
        fourth = discovery_tool(_get_affordances, AFFORDANCES_TOOL, AFFORDANCES_DESCRIPTION)
        with_tool = MCPServer(
            "capreg", tools=[*discovery_tools(registry, static_key(None)), fourth]
        )
        extra = await tools_list_tokens(with_tool)
    return [("as built", *as_built), (f"as built + {AFFORDANCES_TOOL}", *extra)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = asyncio.run(measure())
    lines = [
        "# The bridge's tools/list in o200k tokens",
        "",
        "Command: `.venv/bin/python -m bench.bridge_tools --out docs/results/bridge-tools.md`"
        f" ({datetime.now(UTC):%Y-%m-%d})",
        "",
        f"| bridge | tools | tools/list as sent | within {BUDGET} | as function definitions "
        "(per turn) |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {name} | {', '.join(tools)} | {wire} | {'yes' if wire <= BUDGET else 'no'} "
            f"| {functions} |"
            for name, wire, functions, tools in rows
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
