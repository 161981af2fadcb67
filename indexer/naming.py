"""Function-calling-safe tool names: `^[A-Za-z0-9_-]{1,64}$`, unique and stable per id.

`<catalog>__<tool>` when that is already safe and short enough. Catalog names are safe by
construction and never contain `__` nor end in `_`, so the first `__` separates catalog and
tool: the mapping is injective. Any other id is shortened and suffixed with a hash of the full
id, so the name depends on the id alone (stable across restarts and re-registrations).
"""

from __future__ import annotations

import hashlib
import re

FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_LENGTH = 64
_HASH_CHARS = 10
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def plain_function_name(catalog: str, tool: str) -> str:
    """`<catalog>__<tool>`: the function name whenever it is safe (`function_name`)."""
    return f"{catalog}__{tool}"


def spelling(catalog: str, tool: str, name: str) -> str:
    """What is held of a tool's function `name`: "" when it is the plain one (derived again
    from the id when read: a string a tool less), else the name as it is."""
    return "" if name == plain_function_name(catalog, tool) else name


def spelled_out(catalog: str, tool: str, spelling: str) -> str:
    """The function name whose held form is `spelling` (`spelling`'s inverse)."""
    return spelling or plain_function_name(catalog, tool)


def function_name(catalog: str, tool: str) -> str:
    plain = plain_function_name(catalog, tool)
    if FUNCTION_NAME.fullmatch(plain):
        return plain
    digest = hashlib.sha256(f"{catalog}/{tool}".encode()).hexdigest()[:_HASH_CHARS]
    safe_tool = _UNSAFE.sub("_", tool).strip("_") or "tool"
    stem = f"{catalog}__{safe_tool}"[: MAX_LENGTH - _HASH_CHARS - 1]
    return f"{stem}_{digest}"
