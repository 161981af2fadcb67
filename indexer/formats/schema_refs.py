"""Local JSON `$ref`s resolved inline; a reference back into itself becomes a `$defs` entry.

Tool schemas are read by models and by clients that do not follow references, so every
reference is inlined where it can be. A cycle (a tree node whose children are tree nodes)
cannot be inlined: its target is emitted once under the schema's `$defs` and referenced as
`#/$defs/<name>`, which any JSON Schema 2020-12 reader understands.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

# Inlining shared components multiplies them; this bounds the work long before the 64 KiB
# schema limit would reject the result anyway.
MAX_NODES = 20_000
_DEF_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class RefError(ValueError):
    """A reference that cannot be resolved, or a schema that grows too large."""


class RefResolver:
    """Resolves `#/...` references against one document."""

    def __init__(self, root: object, *, max_nodes: int = MAX_NODES) -> None:
        self._root = root
        self.max_nodes = max_nodes

    def target(self, ref: str) -> object:
        """The value a local reference points at."""
        if not ref.startswith("#"):
            raise RefError(
                f"$ref '{ref}' points outside this document; only local refs ('#/...') resolve"
            )
        node = self._root
        for raw in [p for p in unquote(ref[1:]).split("/") if p] if ref != "#" else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise RefError(f"$ref '{ref}' does not resolve in this document")
        return node

    def follow(self, node: object) -> object:
        """`node` itself, or what its `$ref` chain points at (for parameter/body objects)."""
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise RefError(f"$ref '{ref}' refers to itself")
            seen.add(ref)
            node = self.target(ref)
        return node

    def expansion(self) -> SchemaExpansion:
        """A fresh expansion for one output schema (its own `$defs` and node budget)."""
        return SchemaExpansion(self)


class SchemaExpansion:
    """Expands the parts of one schema; cyclic targets collect in `defs`."""

    def __init__(self, resolver: RefResolver) -> None:
        self.resolver = resolver
        self.defs: dict[str, Any] = {}
        self.names: dict[str, str] = {}
        self.nodes = 0

    def expand(self, node: object, stack: tuple[str, ...] = ()) -> Any:
        """`node` with references inlined."""
        self.nodes += 1
        if self.nodes > self.resolver.max_nodes:
            raise RefError(
                f"the schema has more than {self.resolver.max_nodes} nodes once its $refs "
                "are resolved"
            )
        if isinstance(node, list):
            return [self.expand(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return {key: self.expand(value, stack) for key, value in node.items()}
        # Keywords beside a $ref (a description, say) refine the target, so they win.
        siblings = {k: self.expand(v, stack) for k, v in node.items() if k != "$ref"}
        if ref in stack:
            return {"$ref": f"#/$defs/{self.define(ref)}", **siblings}
        resolved = self.expand(self.resolver.target(ref), (*stack, ref))
        return {**resolved, **siblings} if isinstance(resolved, dict) else resolved

    def define(self, ref: str) -> str:
        """The `$defs` name for a cyclic target, emitting its definition the first time."""
        name = self.names.get(ref)
        if name is not None:
            return name
        base = _DEF_NAME.sub("_", ref.rsplit("/", 1)[-1]) or "def"
        name, n = base, 1
        while name in self.defs:
            n += 1
            name = f"{base}_{n}"
        self.names[ref] = name
        self.defs[name] = {}  # reserved: the definition may refer to itself
        self.defs[name] = self.expand(self.resolver.target(ref), (ref,))
        return name
