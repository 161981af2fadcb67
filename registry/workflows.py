"""Workflows as one caller sees them: the legal moves of a state, and where a reported move leads.

A move is offered only when the caller may see its tool and holds every scope of its guard. A
move the caller may not make is left out exactly like one the catalog never declared, so
neither an answer nor an error tells a caller about tools or guards beyond its own.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from indexer.documents import DocumentError, load_document
from indexer.model import Transition, Workflow, WorkflowState, canonical_json
from indexer.retrieval.tool_index import IndexedTool
from registry.auth.scopes import Grants
from registry.errors import IllegalMove, InvalidRequest, WorkflowNotFound
from registry.wire import (
    MAX_ARGUMENTS_CHARS,
    MAX_STATE_CHARS,
    MAX_TOOL_ID_CHARS,
    MAX_WORKFLOW_ID_CHARS,
)

# Looks a tool id up among what the caller may see (None: missing or invisible).
Lookup = Callable[[str], IndexedTool | None]


def workflow_id(catalog: str, name: str) -> str:
    return f"{catalog}/{name}"


@dataclass(frozen=True, kw_only=True)
class Move:
    """A legal move: the transition and the tool that makes it, as the caller sees it."""

    transition: Transition
    entry: IndexedTool


@dataclass(frozen=True, kw_only=True)
class Affordances:
    workflow_id: str
    state: WorkflowState
    moves: tuple[Move, ...]

    @property
    def tool_ids(self) -> tuple[str, ...]:
        return tuple(move.entry.id for move in self.moves)


def describe(move: Move) -> str:
    """A legal move in one line, as an error lists it: "'support/close_ticket' -> closed"."""
    when = f" when {canonical_json(dict(move.transition.when))}" if move.transition.when else ""
    return f"'{move.entry.id}'{when} -> {move.transition.target}"


def check_request(workflow: str, state: str, tool: str = "", arguments: str = "") -> None:
    """Bounds every field before any work is done with it."""
    for field, value, limit in (
        ("workflow", workflow, MAX_WORKFLOW_ID_CHARS),
        ("state", state, MAX_STATE_CHARS),
        ("tool", tool, MAX_TOOL_ID_CHARS),
        ("arguments", arguments, MAX_ARGUMENTS_CHARS),
    ):
        if len(value) > limit:
            raise InvalidRequest(f"{field}: at most {limit} characters (got {len(value)})")
    if arguments and not tool:
        raise InvalidRequest("arguments: only with tool (the arguments of the move just made)")
    if not workflow:
        if state or tool:
            raise InvalidRequest("state and tool need a workflow ('<catalog>/<workflow>')")
        raise InvalidRequest("workflow is required: '<catalog>/<workflow>' (see ListCatalogs)")


def not_found(wanted: str, visible: Iterable[str]) -> WorkflowNotFound:
    """The error for a workflow id the caller may not use, suggesting close visible ids."""
    return WorkflowNotFound(wanted, difflib.get_close_matches(wanted, list(visible), n=3))


def legal_moves(
    catalog: str, workflow: Workflow, state: str, lookup: Lookup, viewer: Grants
) -> tuple[Move, ...]:
    moves = []
    for transition in workflow.leaving(state):
        if not viewer.allows(transition.scopes):
            continue
        entry = lookup(f"{catalog}/{transition.tool}")
        if entry is not None:
            moves.append(Move(transition=transition, entry=entry))
    return tuple(moves)


def parse_arguments(text: str) -> dict[str, object]:
    """A reported move's arguments: a JSON object (bounded like every document)."""
    if not text:
        return {}
    try:
        value = load_document(text)
    except DocumentError as exc:
        raise InvalidRequest(f"arguments: not a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidRequest("arguments: must be a JSON object of argument name -> value")
    return value


def affordances(
    wanted: str,
    workflow: Workflow,
    *,
    catalog: str,
    state: str,
    tool: str,
    arguments: str = "",
    lookup: Lookup,
    viewer: Grants,
) -> Affordances:
    """The legal moves in `state` (the initial state when empty) or, when `tool` reports a
    move just made there (called with `arguments`, JSON), in the state it led to."""
    called = parse_arguments(arguments)
    name = state or workflow.initial
    current = workflow.state(name)
    if current is None:
        states = ", ".join(s.name for s in workflow.states)
        raise InvalidRequest(
            f"state: '{name}' is not a state of workflow '{wanted}' (states: {states})"
        )
    moves = legal_moves(catalog, workflow, current.name, lookup, viewer)
    if tool:
        made = next((m for m in moves if m.entry.id == tool and m.transition.matches(called)), None)
        if made is None:
            raise IllegalMove(wanted, current.name, tool, [describe(m) for m in moves])
        current = workflow.state(made.transition.target) or current
        moves = legal_moves(catalog, workflow, current.name, lookup, viewer)
    return Affordances(workflow_id=wanted, state=current, moves=moves)
