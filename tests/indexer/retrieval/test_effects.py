"""Which tools may destroy or undo something: MCP annotations first, the name's verb else."""

from __future__ import annotations

import pytest

from indexer.model import JsonObject, Tool
from indexer.retrieval.effects import is_destructive


def tool(name: str, annotations: JsonObject | None = None) -> Tool:
    return Tool(
        catalog="c", name=name, description="", input_schema={}, annotations=annotations or {}
    )


@pytest.mark.parametrize(
    "name",
    ["delete_branch", "rollbackDeployment", "cancel-payment", "kubectl_delete", "revoke_key"],
)
def test_a_destructive_verb_in_the_name_marks_the_tool(name: str) -> None:
    assert is_destructive(tool(name))


@pytest.mark.parametrize(
    "name", ["query_metrics", "get_deployment", "list_flags", "deploy_release"]
)
def test_reading_and_creating_are_not_destructive(name: str) -> None:
    assert not is_destructive(tool(name))


def test_annotations_outrank_the_name() -> None:
    assert is_destructive(tool("apply_manifest", {"destructiveHint": True}))
    assert not is_destructive(tool("delete_preview", {"destructiveHint": False}))
    assert not is_destructive(tool("reset_view", {"readOnlyHint": True}))
    # destructiveHint means nothing on a read-only tool (MCP's own rule).
    assert not is_destructive(tool("show_plan", {"readOnlyHint": True, "destructiveHint": True}))
