"""What the model reads inside a workflow: the moves legal in its state, and the workflows."""

from __future__ import annotations

from mcp_bridge.payloads import GET_TOOL_SCHEMA, LIST_CATALOGS, SEARCH_TOOLS, Payload, call
from registry.client import NotFound, RegistryCallFailed
from registry.proto import registry_pb2 as pb

NO_MOVES = (
    "No move is open to you in this state: the workflow ends here, or your key may make none "
    "of its moves."
)
HOW_TO_MOVE = (
    f"Fetch the tool you will call with {GET_TOOL_SCHEMA}; after calling it, call "
    f"{SEARCH_TOOLS} again with state set to its next_state."
)


def moves_payload(affordances: pb.GetAffordancesResponse, ranked: pb.SearchResponse) -> Payload:
    """Every legal move, the ones the request matches first (in the search's order), then
    the rest as the catalog declares them. A tool may appear twice when its arguments decide
    where it leads (`when`)."""
    rank = {hit.id: position for position, hit in enumerate(ranked.hits)}
    ordered = sorted(
        enumerate(affordances.affordances),
        key=lambda item: (rank.get(item[1].tool_id, len(rank)), item[0]),
    )
    moves = []
    for _, move in ordered:
        entry: Payload = {
            "id": move.tool_id,
            "summary": move.summary,
            "next_state": move.next_state,
        }
        if move.when:
            entry["when"] = move.when
        moves.append(entry)
    payload: Payload = {
        "workflow": affordances.workflow,
        "state": affordances.state,
        "moves": moves,
    }
    if affordances.terminal:
        payload["terminal"] = True
    payload["note"] = HOW_TO_MOVE if moves else NO_MOVES
    return payload


FIX_STATE = "Pass one of the states named above as state, or leave it empty for the first."


def moves_recovery(error: RegistryCallFailed) -> Payload:
    """The way forward after a search inside a workflow was refused."""
    if isinstance(error, NotFound):  # an unknown workflow: the listing names the real ones
        return {"error": str(error), "next_calls": [call(LIST_CATALOGS)]}
    return {"error": str(error), "fix": FIX_STATE}


def with_workflows(payload: Payload, reply: pb.ListCatalogsResponse) -> Payload:
    """A catalogs payload with each catalog's workflows and the call that enters each."""
    for entry, catalog in zip(payload["catalogs"], reply.catalogs, strict=True):
        if catalog.workflows:
            entry["workflows"] = [
                {
                    "id": flow.id,
                    "title": flow.title,
                    "start": call(
                        SEARCH_TOOLS,
                        query=flow.title or flow.id,
                        workflow=flow.id,
                        state=flow.initial_state,
                    ),
                }
                for flow in catalog.workflows
            ]
    return payload
