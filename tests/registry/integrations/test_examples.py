"""The runnable examples: they compile and import without the network, and each drives a whole
loop through the official SDK client, against a real registry, with the vendor's endpoint
stood in by a local fake (see fake_vendor.py)."""

from __future__ import annotations

import asyncio
import importlib.util
import py_compile
import sys
from types import ModuleType
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import MessageParam, ToolUnionParam
from openai.types.responses import ResponseInputItemParam, ToolParam

from registry.client import RegistryClient, RegistryTarget
from tests.conftest import ROOT
from tests.registry.integrations.conformance import conforms
from tests.registry.integrations.fake_vendor import fake_vendor

EXAMPLES = ROOT / "docs" / "examples"
TASK = "A customer cannot log in: open a support ticket for them."
QUERY = "open a support ticket for a customer"


def load_example(name: str) -> ModuleType:
    """An example imported as a module: only definitions run, no request is sent."""
    spec = importlib.util.spec_from_file_location(
        f"capreg_examples.{name}", EXAMPLES / f"{name}.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through it
    spec.loader.exec_module(module)
    return module


ANTHROPIC_EXAMPLE = load_example("anthropic_tool_search")
OPENAI_EXAMPLE = load_example("openai_tool_search")


@pytest.mark.parametrize("example", [ANTHROPIC_EXAMPLE, OPENAI_EXAMPLE])
def test_each_example_compiles_and_shows_its_usage_without_the_network(
    example: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert example.__file__ is not None
    py_compile.compile(example.__file__, doraise=True)
    with pytest.raises(SystemExit) as exit_info:
        example.main(["--help"])
    assert exit_info.value.code == 0
    assert "task" in capsys.readouterr().out


def anthropic_message(*content: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_EXAMPLE.MODEL,
        "content": list(content),
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def claude_searches(request: dict[str, Any]) -> dict[str, Any]:
    return anthropic_message(
        {"type": "tool_use", "id": "toolu_01", "name": "search_tools", "input": {"query": QUERY}}
    )


def claude_calls_the_first_reference(request: dict[str, Any]) -> dict[str, Any]:
    [result] = request["messages"][-1]["content"]
    first = next(b["tool_name"] for b in result["content"] if b["type"] == "tool_reference")
    return anthropic_message(
        {"type": "tool_use", "id": "toolu_02", "name": first, "input": {"subject": "login"}}
    )


async def test_the_anthropic_example_runs_the_loop_through_the_sdk(registry_address: str) -> None:
    with fake_vendor([claude_searches, claude_calls_the_first_reference]) as vendor:
        claude = anthropic.Anthropic(api_key="test-key", base_url=vendor.url, max_retries=0)
        with RegistryClient(RegistryTarget(address=registry_address)) as registry:
            choice = await asyncio.to_thread(ANTHROPIC_EXAMPLE.choose_tool, claude, registry, TASK)
            hits = (await asyncio.to_thread(registry.search, QUERY)).hits

    first, second = vendor.requests
    assert vendor.paths == ["/v1/messages", "/v1/messages"]
    for request in vendor.requests:
        for tool in request["tools"]:
            conforms(ToolUnionParam, tool)
        for message in request["messages"]:
            conforms(MessageParam, message)
    assert [tool["name"] for tool in first["tools"]] == ["search_tools"]
    # The answer to the search, as the SDK sent it: a reference per hit, each to a tool the
    # same request defines as deferred.
    [result] = second["messages"][-1]["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_01"
    referred = [block["tool_name"] for block in result["content"]]
    deferred = {tool["name"] for tool in second["tools"] if tool.get("defer_loading")}
    assert set(referred) == deferred
    assert len(referred) == len(hits)
    assert choice.function_name == referred[0]
    assert choice.id == hits[0].id
    assert choice.arguments == {"subject": "login"}


def openai_response(*output: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_01",
        "object": "response",
        "created_at": 0,
        "model": OPENAI_EXAMPLE.MODEL,
        "status": "completed",
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
    }


def model_searches(request: dict[str, Any]) -> dict[str, Any]:
    return openai_response(
        {
            "type": "tool_search_call",
            "id": "tsc_01",
            "call_id": "call_01",
            "execution": "client",
            "status": "completed",
            "arguments": {"query": QUERY},
        }
    )


def model_calls_the_first_loaded_tool(request: dict[str, Any]) -> dict[str, Any]:
    output = next(i for i in request["input"] if i.get("type") == "tool_search_output")
    return openai_response(
        {
            "type": "function_call",
            "id": "fc_01",
            "call_id": "call_02",
            "name": output["tools"][0]["name"],
            "arguments": '{"subject": "login"}',
            "status": "completed",
        }
    )


async def test_the_openai_example_runs_the_loop_through_the_sdk(registry_address: str) -> None:
    with fake_vendor([model_searches, model_calls_the_first_loaded_tool]) as vendor:
        client = openai.OpenAI(api_key="test-key", base_url=vendor.url, max_retries=0)
        with RegistryClient(RegistryTarget(address=registry_address)) as registry:
            choice = await asyncio.to_thread(OPENAI_EXAMPLE.choose_tool, client, registry, TASK)
            hits = (await asyncio.to_thread(registry.search, QUERY)).hits

    first, second = vendor.requests
    assert vendor.paths == ["/responses", "/responses"]
    for request in vendor.requests:
        for tool in request["tools"]:
            conforms(ToolParam, tool)
        for item in request["input"]:
            conforms(ResponseInputItemParam, item)
    assert first["tools"] == second["tools"] == [OPENAI_EXAMPLE.OpenAIToolSearch().search_tool()]
    # The search call went back as the model made it, then its answer for the same call_id.
    call, output = second["input"][-2:]
    assert call["type"] == "tool_search_call"
    assert output["type"] == "tool_search_output"
    assert output["call_id"] == call["call_id"] == "call_01"
    assert len(output["tools"]) == len(hits)
    assert choice.id == hits[0].id
    assert choice.function_name == output["tools"][0]["name"]
    assert choice.arguments == {"subject": "login"}
