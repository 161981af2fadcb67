"""What the bridge's tools/list costs in o200k tokens, as built and with affordances as a tool.

The bridge exposes affordances as a fourth discovery tool only if tools/list stays within the
450-token budget (decision 0022); otherwise they ride in search_tools' arguments. This prints
both sizes so the choice can be checked:

    .venv/bin/python -m bench.bridge_tools --out docs/results/bridge-tools.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from indexer.evaluation.tokens import count_tokens
from mcp_bridge.server import build_server, static_key
from registry.client import AsyncRegistryClient, RegistryTarget

BUDGET = 450
# The fourth tool as it would have to be written: the fewest words that still tell a model
# when to call it and what it returns.
AFFORDANCES_TOOL = "get_affordances"
AFFORDANCES_DESCRIPTION = (
    "Tools legal in a workflow's current state (workflows: list_catalogs), each with the "
    "state it leads to. Call it after each step."
)
Workflow = Annotated[str, Field(description="'<catalog>/<workflow>' from list_catalogs")]
State = Annotated[str, Field(description="The current state; empty: the initial one")]


async def _get_affordances(
    workflow: Workflow, ctx: Context[Any, Any], state: State = ""
) -> CallToolResult:
    raise NotImplementedError("only listed, never called")


async def tools_list_tokens(server: MCPServer) -> tuple[int, list[str]]:
    async with Client(server) as client:
        listed = await client.list_tools()
    wire = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = json.dumps({"tools": wire["tools"]}, ensure_ascii=False)
    return count_tokens(text, "o200k_base"), [t["name"] for t in wire["tools"]]


async def measure() -> list[tuple[str, int, list[str]]]:
    # No call reaches the registry: listing tools is the bridge's own answer.
    target = RegistryTarget(address="127.0.0.1:9", timeout=1.0)
    async with AsyncRegistryClient(target) as registry:
        built = build_server(registry, static_key(None))
        as_built = await tools_list_tokens(built)
        with_tool = build_server(registry, static_key(None))
        with_tool.add_tool(
            _get_affordances,
            name=AFFORDANCES_TOOL,
            description=AFFORDANCES_DESCRIPTION,
            annotations=ToolAnnotations(read_only_hint=True),
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
        f"| bridge | tools | o200k tokens | within {BUDGET} |",
        "| --- | --- | --- | --- |",
        *(
            f"| {name} | {', '.join(tools)} | {tokens} | {'yes' if tokens <= BUDGET else 'no'} |"
            for name, tokens, tools in rows
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
