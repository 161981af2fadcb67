"""Claude finds a capreg tool through client-side tool search, and the choice is printed.

    ANTHROPIC_API_KEY=... CAPREG_SERVER=127.0.0.1:50051 [CAPREG_API_KEY=...] \\
        python docs/examples/anthropic_tool_search.py "open a ticket for ACME's login outage"

The request carries one custom search tool (`search_tools`) and the deferred definitions
(`defer_loading: true`) of the tools found so far. Each `tool_use` of `search_tools` is run
here against the registry, with the registry key, and answered with a `tool_result` of
`tool_reference` blocks; the API expands them into those tools' definitions. The loop ends
at the first call of a registry tool, which is printed, not run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import anthropic
from anthropic.types import MessageParam, ToolResultBlockParam, ToolUnionParam, ToolUseBlock

from registry.client import DEFAULT_TIMEOUT_SECONDS, RegistryClient, RegistryTarget
from registry.integrations.anthropic import AnthropicToolSearch

MODEL = "claude-sonnet-5"
MAX_TOKENS = 2048
# Searches Claude may make before it must have chosen.
MAX_TURNS = 5


@dataclass(frozen=True, kw_only=True)
class Choice:
    """The registry tool Claude called, and the arguments it chose (not executed here)."""

    id: str
    function_name: str
    arguments: dict[str, Any]


def choose_tool(
    claude: anthropic.Anthropic,
    registry: RegistryClient,
    task: str,
    *,
    model: str = MODEL,
    search: AnthropicToolSearch | None = None,
    max_turns: int = MAX_TURNS,
) -> Choice | None:
    """Runs the loop until Claude calls a registry tool; None if it answers without one."""
    search = search if search is not None else AnthropicToolSearch()
    messages: list[MessageParam] = [{"role": "user", "content": task}]
    for _ in range(max_turns):
        reply = claude.messages.create(
            model=model,
            max_tokens=MAX_TOKENS,
            # capreg's payloads are plain dicts of the SDK's shapes (its tests check them).
            tools=cast("list[ToolUnionParam]", search.tools()),
            messages=messages,
        )
        uses = [block for block in reply.content if isinstance(block, ToolUseBlock)]
        for use in uses:
            if not search.is_search(use):
                tool_id = search.capreg_id(use.name)
                if tool_id is None:
                    raise RuntimeError(f"Claude called {use.name!r}, which was never loaded")
                return Choice(id=tool_id, function_name=use.name, arguments=dict(use.input))
        if not uses:
            print("".join(b.text for b in reply.content if b.type == "text"), file=sys.stderr)
            return None
        messages.append({"role": "assistant", "content": reply.content})
        results = [cast("ToolResultBlockParam", search.handle(registry, use)) for use in uses]
        messages.append({"role": "user", "content": results})
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help="what the user asks for, in words")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--limit", type=int, default=0, help="hits per search (0: confident set)")
    args = parser.parse_args(argv)
    target = RegistryTarget(
        address=os.environ.get("CAPREG_SERVER", "127.0.0.1:50051"),
        api_key=os.environ.get("CAPREG_API_KEY"),
        timeout=DEFAULT_TIMEOUT_SECONDS,
    )
    with RegistryClient(target) as registry:
        choice = choose_tool(
            anthropic.Anthropic(),  # reads ANTHROPIC_API_KEY
            registry,
            args.task,
            model=args.model,
            search=AnthropicToolSearch(limit=args.limit),
        )
    if choice is None:
        print("Claude called no registry tool.")
        return 1
    print(f"{choice.id}  ({choice.function_name})")
    print(json.dumps(choice.arguments, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
