"""`capreg bridge` over stdio as the official MCP Inspector CLI (npm, pinned) sees it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from registry.client import AsyncRegistryClient, RegistryTarget
from tests.conftest import ROOT
from tests.mcp_bridge.conftest import STARTUP_SECONDS, SecuredRegistry

# Installed from the committed lockfile by `make test` (the rule in the Makefile): a missing
# install fails the tests below rather than skipping them, so CI cannot pass without them.
INSPECTOR_DIR = Path(__file__).resolve().parent / "inspector"
INSPECTOR = INSPECTOR_DIR / "node_modules" / ".bin" / "mcp-inspector"
TRIAGE = "support/ticket_triage"

# The Inspector is an npm install: `make test-fast` leaves these tests out.
pytestmark = pytest.mark.npm


@dataclass(frozen=True, kw_only=True)
class InspectorRun:
    returncode: int
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The JSON the Inspector printed: the MCP response of the method it was asked for."""
        assert self.returncode == 0, self.stderr
        printed: dict[str, Any] = json.loads(self.stdout)
        return printed


async def inspect(address: str, *method: str, key: str | None = None) -> InspectorRun:
    """`mcp-inspector --cli <the bridge over stdio> <method options>` as a subprocess."""
    if not INSPECTOR.exists():
        pytest.fail(f"MCP Inspector not installed: run `make test` (npm ci in {INSPECTOR_DIR})")
    # The Inspector hands its whole environment to the bridge: drop the developer's CAPREG_*
    # so only the key under test reaches it.
    env = {name: value for name, value in os.environ.items() if not name.startswith("CAPREG_")}
    if key:
        env["CAPREG_API_KEY"] = key
    bridge = (sys.executable, "-m", "capreg.cli", "bridge", "--registry", address)
    # Its own session: the Inspector runs node, which runs the bridge, and a timeout must
    # stop all three.
    process = await asyncio.create_subprocess_exec(
        INSPECTOR,
        "--cli",
        *bridge,
        *method,
        cwd=ROOT,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), STARTUP_SECONDS)
    except TimeoutError:
        os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        raise
    return InspectorRun(
        returncode=process.returncode or 0, stdout=stdout.decode(), stderr=stderr.decode()
    )


def tool_call(tool: str, **arguments: str) -> list[str]:
    """The Inspector's options for tools/call; it converts each value by the tool's schema."""
    options = ["--method", "tools/call", "--tool-name", tool]
    for name, value in arguments.items():
        options += ["--tool-arg", f"{name}={value}"]
    return options


def structured(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result's structured payload (beside it, one text block for the model)."""
    [text] = result["content"]
    assert text["type"] == "text"
    assert text["text"]
    payload: dict[str, Any] = result["structuredContent"]
    return payload


async def test_the_inspector_lists_exactly_the_three_discovery_tools(
    registry_address: str,
) -> None:
    listed = (await inspect(registry_address, "--method", "tools/list")).result()
    tools = {tool["name"]: tool["inputSchema"] for tool in listed["tools"]}
    assert set(tools) == {"search_tools", "get_tool_schema", "list_catalogs"}
    assert tools["search_tools"]["required"] == ["query"]
    assert {"workflow", "state"} <= set(tools["search_tools"]["properties"])
    assert tools["get_tool_schema"]["properties"]["ids"]["type"] == "array"


async def test_a_search_in_a_workflow_state_returns_the_registrys_legal_moves(
    registry_address: str,
) -> None:
    arguments = {"query": "route the ticket to an agent", "workflow": TRIAGE, "state": "new"}
    result = (await inspect(registry_address, *tool_call("search_tools", **arguments))).result()
    assert not result.get("isError", False)
    found = structured(result)
    assert (found["workflow"], found["state"]) == (TRIAGE, "new")
    assert found["moves"]
    assert all(move["next_state"] for move in found["moves"])
    target = RegistryTarget(address=registry_address)
    async with AsyncRegistryClient(target) as registry:
        legal = await registry.get_affordances(TRIAGE, "new", key=None)
    assert sorted((m["id"], m["next_state"]) for m in found["moves"]) == sorted(
        (a.tool_id, a.next_state) for a in legal.affordances
    )


async def test_an_unknown_workflow_is_an_error_result_pointing_to_list_catalogs(
    registry_address: str,
) -> None:
    arguments = {"query": "close it", "workflow": "support/no_such_flow", "state": "new"}
    result = (await inspect(registry_address, *tool_call("search_tools", **arguments))).result()
    assert result["isError"] is True
    refused = structured(result)
    assert refused["error"].startswith("unknown workflow 'support/no_such_flow'")
    assert refused["next_calls"] == [{"tool": "list_catalogs", "arguments": {}}]


async def test_list_catalogs_names_every_catalog_and_the_sample_workflows(
    registry_address: str,
) -> None:
    result = (await inspect(registry_address, *tool_call("list_catalogs"))).result()
    catalogs = structured(result)["catalogs"]
    assert len(catalogs) == 9
    workflows = {flow["id"] for catalog in catalogs for flow in catalog.get("workflows", [])}
    assert {TRIAGE, "finance/expense_approval"} <= workflows


async def test_the_agents_key_reaches_the_bridge_through_the_inspector(
    secured_registry: SecuredRegistry,
) -> None:
    address, key = secured_registry.address, secured_registry.support_key
    listed = (await inspect(address, *tool_call("list_catalogs"), key=key)).result()
    ids = json.dumps(["support/assign_ticket", "support/get_ticket"])
    fetched = (await inspect(address, *tool_call("get_tool_schema", ids=ids), key=key)).result()
    assert [catalog["name"] for catalog in structured(listed)["catalogs"]] == ["support"]
    # The array travels as JSON text; the Inspector parses it because the schema says array.
    tools = structured(fetched)["tools"]
    assert [tool["id"] for tool in tools] == ["support/assign_ticket", "support/get_ticket"]
    assert all(tool["function"]["parameters"]["type"] == "object" for tool in tools)


async def test_a_misspelled_id_is_an_error_result_with_the_corrected_call(
    secured_registry: SecuredRegistry,
) -> None:
    # hr/get_employee exists, outside the support key's scopes: it is unknown to this agent.
    ids = json.dumps(["support/create_tiket", "hr/get_employee"])
    result = (
        await inspect(
            secured_registry.address,
            *tool_call("get_tool_schema", ids=ids),
            key=secured_registry.support_key,
        )
    ).result()
    assert result["isError"] is True
    refused = structured(result)
    assert refused["suggestions"]["support/create_tiket"][0] == "support/create_ticket"
    suggested = [s for found in refused["suggestions"].values() for s in found]
    assert not [s for s in suggested if s.startswith("hr/")]
    retry = refused["next_calls"][0]
    assert retry["tool"] == "get_tool_schema"
    assert retry["arguments"]["ids"][0] == "support/create_ticket"


async def test_without_a_key_the_inspector_reports_the_refusal_and_exits_non_zero(
    secured_registry: SecuredRegistry,
) -> None:
    run = await inspect(secured_registry.address, *tool_call("search_tools", query="payroll"))
    assert run.returncode != 0
    assert "credentials" in run.stderr
