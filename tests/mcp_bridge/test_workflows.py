"""Workflows through the bridge, with the MCP SDK's client: list_catalogs names them with the
call that enters each, and search_tools with a workflow and state returns exactly the moves
the registry's GetAffordances offers the agent's key."""

from __future__ import annotations

import grpc

from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.mcp_bridge.conftest import SecuredRegistry, in_memory_bridge, payload

TRIAGE = "support/ticket_triage"


async def registry_moves(address: str, key: str | None, state: str) -> list[tuple[str, str]]:
    metadata = (("authorization", f"Bearer {key}"),) if key else ()
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await pb_grpc.CapabilityRegistryStub(channel).GetAffordances(
            pb.GetAffordancesRequest(workflow=TRIAGE, state=state), metadata=metadata
        )
    return sorted((a.tool_id, a.next_state) for a in reply.affordances)


async def test_list_catalogs_names_each_workflow_and_the_call_that_enters_it(
    registry_address: str,
) -> None:
    async with in_memory_bridge(registry_address) as client:
        listed = payload(await client.call_tool("list_catalogs", {}))
        [support] = [c for c in listed["catalogs"] if c["name"] == "support"]
        [flow] = support["workflows"]
        assert flow["id"] == TRIAGE
        start = flow["start"]
        assert start["arguments"]["workflow"] == TRIAGE
        assert start["arguments"]["state"] == "new"
        entered = await client.call_tool(start["tool"], start["arguments"])
    assert not entered.is_error
    assert payload(entered)["state"] == "new"


async def test_search_in_a_state_returns_exactly_the_legal_moves_best_first(
    registry_address: str,
) -> None:
    arguments = {"query": "route the ticket to an agent", "workflow": TRIAGE, "state": "new"}
    async with in_memory_bridge(registry_address) as client:
        found = payload(await client.call_tool("search_tools", arguments))
    assert (found["workflow"], found["state"]) == (TRIAGE, "new")
    moves = [(m["id"], m["next_state"]) for m in found["moves"]]
    assert moves[0] == ("support/assign_ticket", "triaged")
    assert sorted(moves) == await registry_moves(registry_address, None, "new")
    assert "next_state" in found["note"]


async def test_a_terminal_state_says_so(registry_address: str) -> None:
    arguments = {"query": "ask the customer how we did", "workflow": TRIAGE, "state": "closed"}
    async with in_memory_bridge(registry_address) as client:
        found = payload(await client.call_tool("search_tools", arguments))
    assert found["terminal"] is True
    assert found["moves"][0]["id"] == "support/send_csat_survey"


async def test_the_agents_key_decides_which_moves_it_is_offered(
    secured_registry: SecuredRegistry,
) -> None:
    arguments = {"query": "escalate it", "workflow": TRIAGE, "state": "triaged"}
    async with in_memory_bridge(secured_registry.address, key=secured_registry.support_key) as c:
        support = payload(await c.call_tool("search_tools", arguments))
    assert sorted((m["id"], m["next_state"]) for m in support["moves"]) == await registry_moves(
        secured_registry.address, secured_registry.support_key, "triaged"
    )
    # The HR agent may not see the support catalog: its workflow does not exist for it.
    async with in_memory_bridge(secured_registry.address, key=secured_registry.hr_key) as c:
        refused = await c.call_tool("search_tools", arguments)
    assert refused.is_error
    assert payload(refused)["error"].startswith(f"unknown workflow '{TRIAGE}'")
    assert payload(refused)["next_calls"] == [{"tool": "list_catalogs", "arguments": {}}]


async def test_an_unknown_state_is_an_error_result_naming_the_states(registry_address: str) -> None:
    arguments = {"query": "close it", "workflow": TRIAGE, "state": "done"}
    async with in_memory_bridge(registry_address) as client:
        refused = await client.call_tool("search_tools", arguments)
    assert refused.is_error
    error = payload(refused)["error"]
    assert "'done' is not a state of workflow 'support/ticket_triage'" in error
    assert "awaiting_customer" in error
    assert payload(refused)["fix"].startswith("Pass one of the states named above")
