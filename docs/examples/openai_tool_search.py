"""A GPT model finds a capreg tool through client-executed tool search; the choice is printed.

    OPENAI_API_KEY=... CAPREG_SERVER=127.0.0.1:50051 [CAPREG_API_KEY=...] \\
        python docs/examples/openai_tool_search.py "open a ticket for ACME's login outage"

The request carries one tool, `{"type": "tool_search", "execution": "client", ...}`. Each
`tool_search_call` the model makes is run here against the registry, with the registry key,
and answered with a `tool_search_output` item whose `tools` are the hits' function
definitions (`defer_loading: true`). The loop ends at the first `function_call` of a
registry tool, which is printed, not run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import openai
from openai.types.responses import ResponseFunctionToolCall, ResponseInputParam, ToolParam

from registry.client import DEFAULT_TIMEOUT_SECONDS, RegistryClient, RegistryTarget
from registry.integrations.openai import OpenAIToolSearch

# Tool search needs gpt-5.4 or later.
MODEL = "gpt-5.4"
# Searches the model may make before it must have chosen.
MAX_TURNS = 5


@dataclass(frozen=True, kw_only=True)
class Choice:
    """The registry tool the model called, and the arguments it chose (not executed here)."""

    id: str
    function_name: str
    arguments: dict[str, Any]


def choose_tool(
    client: openai.OpenAI,
    registry: RegistryClient,
    task: str,
    *,
    model: str = MODEL,
    search: OpenAIToolSearch | None = None,
    max_turns: int = MAX_TURNS,
) -> Choice | None:
    """Runs the loop until the model calls a registry tool; None if it answers without one."""
    search = search if search is not None else OpenAIToolSearch()
    # The whole conversation is resent each turn (no stored state): the model's own output
    # items go back as they came, followed by the answers to its searches.
    conversation: list[Any] = [{"role": "user", "content": task}]
    for _ in range(max_turns):
        response = client.responses.create(
            model=model,
            input=cast("ResponseInputParam", conversation),
            # capreg's payloads are plain dicts of the SDK's shapes (its tests check them).
            tools=cast("list[ToolParam]", search.tools()),
        )
        for item in response.output:
            if isinstance(item, ResponseFunctionToolCall):
                tool_id = search.capreg_id(item.name)
                if tool_id is None:
                    raise RuntimeError(f"the model called {item.name!r}, which was never loaded")
                arguments = json.loads(item.arguments or "{}")
                return Choice(id=tool_id, function_name=item.name, arguments=arguments)
        searches = [item for item in response.output if search.is_search(item)]
        if not searches:
            print(response.output_text, file=sys.stderr)
            return None
        conversation.extend(response.output)
        for call in searches:
            conversation.extend(search.handle(registry, call.model_dump()))
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
            openai.OpenAI(),  # reads OPENAI_API_KEY
            registry,
            args.task,
            model=args.model,
            search=OpenAIToolSearch(limit=args.limit),
        )
    if choice is None:
        print("The model called no registry tool.")
        return 1
    print(f"{choice.id}  ({choice.function_name})")
    print(json.dumps(choice.arguments, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
