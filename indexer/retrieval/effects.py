"""What a tool does to the world, as far as its annotations and its name say: whether calling
it may destroy or undo something (a delete, a rollback, a cancellation)."""

from __future__ import annotations

from indexer.model import Tool
from indexer.retrieval.features import words_of

# Verbs whose call removes, reverts or stops something that cannot simply be read back.
DESTRUCTIVE_VERBS = frozenset(
    {
        "delete",
        "remove",
        "destroy",
        "drop",
        "purge",
        "wipe",
        "erase",
        "truncate",
        "rollback",
        "revert",
        "undo",
        "cancel",
        "terminate",
        "kill",
        "revoke",
        "uninstall",
        "reset",
        "void",
        "refund",
        "archive",
    }
)


def is_destructive(tool: Tool) -> bool:
    """True when MCP annotations say the tool may destroy (`destructiveHint` on a tool that is
    not read-only), or, without that hint, when its name carries a destructive verb. A tool
    annotated read-only or `destructiveHint: false` never is."""
    hints = tool.annotations
    if hints.get("readOnlyHint") is True or hints.get("destructiveHint") is False:
        return False
    if hints.get("destructiveHint") is True:
        return True
    return not DESTRUCTIVE_VERBS.isdisjoint(words_of(tool.name))
