"""Typed domain errors under the one root, `CapregError`; registry/rpc/status.py maps each to
one gRPC code (a catalog's `CatalogError` and the store's `StoreError` share the root)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from indexer.errors import CapregError

__all__ = [
    "CallerGone",
    "CapregError",
    "CatalogNotFound",
    "IllegalMove",
    "InvalidRequest",
    "NotReady",
    "Overloaded",
    "PermissionDenied",
    "ToolsNotFound",
    "Unauthenticated",
    "WorkflowNotFound",
]


# Said after the unknown ids when one has no slash.
ID_SHAPE = "; a tool id is <catalog>/<tool name>, as each search hit names it"


class InvalidRequest(CapregError):
    """A malformed request: the message names the field and the rule."""


class ToolsNotFound(CapregError):
    """Ids that do not exist or that the caller may not see (deliberately the same)."""

    def __init__(self, missing: Mapping[str, Sequence[str]]) -> None:
        self.missing = dict(missing)
        parts = []
        for tool_id, suggestions in self.missing.items():
            hint = f" (did you mean: {', '.join(suggestions)})" if suggestions else ""
            parts.append(f"'{tool_id}'{hint}")
        # Whole entries only, within the status message's budget (clients parse them).
        shown: list[str] = []
        budget = 1_800
        for part in parts:
            if budget - len(part) - 2 < 0:
                break
            shown.append(part)
            budget -= len(part) + 2
        more = f"; and {len(parts) - len(shown)} more" if len(shown) < len(parts) else ""
        # An id without a slash is most often a tool name alone. No quotes in the hint:
        # clients read the quoted parts as the unknown ids.
        shape = ID_SHAPE if any("/" not in tool_id for tool_id in self.missing) else ""
        super().__init__("unknown tool id: " + "; ".join(shown) + more + shape)


class CatalogNotFound(CapregError):
    def __init__(self, name: str, suggestions: Sequence[str] = ()) -> None:
        self.name = name
        self.suggestions = list(suggestions)
        hint = f"did you mean: {', '.join(suggestions)}" if suggestions else "see ListCatalogs"
        # A name with a slash is a tool id: a catalog is the part before it.
        shape = "; a catalog name has no slash (tool ids are <catalog>/<tool name>)"
        super().__init__(f"unknown catalog '{name}' ({hint}){shape if '/' in name else ''}")


class WorkflowNotFound(CapregError):
    """A workflow that does not exist or whose catalog the caller may not see (the same)."""

    def __init__(self, workflow_id: str, suggestions: Sequence[str] = ()) -> None:
        self.workflow_id = workflow_id
        self.suggestions = list(suggestions)
        hint = f" (did you mean: {', '.join(suggestions)})" if suggestions else ""
        super().__init__(f"unknown workflow '{workflow_id}'{hint}")


class IllegalMove(CapregError):
    """A tool reported as called in a state where it is not a legal move for this caller;
    `legal` lists the legal moves, one line each ("'support/close_ticket' -> closed")."""

    def __init__(self, workflow_id: str, state: str, tool: str, legal: Sequence[str]) -> None:
        self.workflow_id = workflow_id
        self.state = state
        self.tool = tool
        self.legal = list(legal)
        moves = "; ".join(self.legal) or "none"
        super().__init__(
            f"'{tool}' is not a legal move from state '{state}' of workflow '{workflow_id}'; "
            f"legal moves: {moves}"
        )


class NotReady(CapregError):
    """The index is still loading."""


class Unauthenticated(CapregError):
    """Missing or unknown credentials."""


class PermissionDenied(CapregError):
    """A known caller lacks the scope this operation needs."""


class Overloaded(CapregError):
    """Too much work is already waiting; the message says when to retry."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CallerGone(CapregError):
    """The caller left or its deadline passed before the work started: it was not done."""
