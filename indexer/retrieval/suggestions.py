""" "Did you mean": the ids among a caller's visible tools that look like an unknown id."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

MAX_SUGGESTIONS = 3
_SUGGESTION_POOL = 5_000


def close_ids(tool_id: str, visible: Sequence[str]) -> list[str]:
    """Up to MAX_SUGGESTIONS of the `visible` ids (in id order) close to `tool_id`: by the
    whole id first, then by the tool name alone."""
    catalog, _, name = tool_id.partition("/")
    pool = list(visible)
    if len(pool) > _SUGGESTION_POOL:
        # difflib is quadratic-ish; narrow to the same catalog or a similar tool name.
        narrowed = [i for i in pool if i.startswith(catalog + "/") or name in i]
        pool = narrowed[:_SUGGESTION_POOL]
    close = difflib.get_close_matches(tool_id, pool, n=MAX_SUGGESTIONS, cutoff=0.5)
    if len(close) < MAX_SUGGESTIONS and name:
        by_name = {i.partition("/")[2]: i for i in pool}
        for match in difflib.get_close_matches(name, list(by_name), n=MAX_SUGGESTIONS):
            if by_name[match] not in close and len(close) < MAX_SUGGESTIONS:
                close.append(by_name[match])
    return close
