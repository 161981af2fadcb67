"""Declared links between tools: read from each tool entry, then resolved against the catalog.

Reading checks a link's own shape (`rel`, `target`, `arguments`). Resolving waits until every
tool of the catalog is read, because a bare target names a tool of the same catalog and the
argument names must be that tool's inputs. A target in another catalog (`other/tool`) is
kept as written: whether it exists, and whether a caller may see it, is known only when a
schema is read (see `registry.snapshot.Snapshot.schemas`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from indexer.formats.rules import (
    LINK_REL,
    MAX_ITEM_CHARS,
    MAX_LIST_ITEMS,
    MAX_TOOL_NAME,
    check_catalog_name,
)
from indexer.formats.validate import Checker
from indexer.model import MAX_LINKS, JsonObject, Tool, ToolLink

KEYS = frozenset({"rel", "target", "arguments"})
# "<catalog>/<tool>": a catalog name (64) and a tool name with the separator.
MAX_TARGET = 64 + 1 + MAX_TOOL_NAME


@dataclass(kw_only=True, frozen=True)
class DeclaredLink:
    """A link as the catalog writes it, before its target is resolved."""

    # Where it is written, as problems name it: "tools[0] 'create_ticket'.links[1]".
    label: str
    rel: str
    target: str
    arguments: Mapping[str, str] = field(default_factory=dict)


def read_links(check: Checker, value: object, label: str) -> tuple[DeclaredLink, ...]:
    """The well-formed links of one tool entry; every malformed one is named in `check`."""
    if value is None:
        return ()
    if not isinstance(value, list):
        check.add(label, "must be a list of links ({rel, target, arguments})")
        return ()
    if len(value) > MAX_LINKS:
        check.add(label, f"must have at most {MAX_LINKS} links (has {len(value)})")
        return ()
    links = []
    for index, entry in enumerate(value):
        link = _read_link(check, entry, f"{label}[{index}]")
        if link is not None:
            links.append(link)
    return tuple(links)


def _read_link(check: Checker, entry: object, where: str) -> DeclaredLink | None:
    if not isinstance(entry, dict):
        check.add(where, "must be an object with rel and target")
        return None
    before = len(check.problems)
    unknown = sorted(str(key) for key in entry if key not in KEYS)
    if unknown:
        # A misspelt "arguments" would otherwise drop the mapping without a word.
        check.add(
            where, f"unknown key(s) {', '.join(unknown)}; a link has {', '.join(sorted(KEYS))}"
        )
    rel = entry.get("rel")
    if not isinstance(rel, str) or not LINK_REL.fullmatch(rel):
        shown = f"'{rel[:80]}' " if isinstance(rel, str) else ""
        check.add(f"{where}.rel", f"{shown}must match {LINK_REL.pattern} (e.g. read, next)")
    target = entry.get("target")
    if not isinstance(target, str) or not target or len(target) > MAX_TARGET:
        check.add(
            f"{where}.target",
            "is required: a tool of this catalog, or '<catalog>/<tool>' for another catalog",
        )
    arguments = _read_arguments(check, entry.get("arguments"), f"{where}.arguments")
    # The type tests repeat what was checked above, for the type checker.
    if len(check.problems) > before or not isinstance(rel, str) or not isinstance(target, str):
        return None
    return DeclaredLink(label=where, rel=rel, target=target, arguments=arguments)


def _read_arguments(check: Checker, value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        check.add(where, 'must be an object: target input -> reference into the result ("$.id")')
        return {}
    if len(value) > MAX_LIST_ITEMS:
        check.add(where, f"must have at most {MAX_LIST_ITEMS} entries")
    arguments: dict[str, str] = {}
    for key, reference in value.items():
        if not isinstance(key, str) or not key:
            check.add(where, "keys must be the target's input property names")
        elif (
            not isinstance(reference, str)
            or not reference.startswith("$")
            or len(reference) > MAX_ITEM_CHARS
        ):
            check.add(
                f"{where}.{key}",
                f"must be a reference into this tool's result starting with '$' (\"$.id\", "
                f'"$.items[0].id"), at most {MAX_ITEM_CHARS} characters',
            )
        else:
            arguments[key] = reference
    return arguments


def resolve_links(
    check: Checker,
    catalog: str,
    tools: Sequence[Tool],
    declared: Sequence[tuple[DeclaredLink, ...]],
) -> list[Tool]:
    """`tools` with their declared links (`declared[i]` belongs to `tools[i]`), each target
    made a tool id; a target or argument that names nothing is a problem in `check`."""
    by_name = {tool.name: tool for tool in tools}
    resolved = []
    for tool, links in zip(tools, declared, strict=True):
        kept: list[ToolLink] = []
        seen: set[tuple[str, str]] = set()
        for link in links:
            target_id = _target_id(check, catalog, by_name, link)
            if target_id is None:
                continue
            if (link.rel, target_id) in seen:
                check.add(link.label, f"repeats the link '{link.rel}' to '{target_id}'")
                continue
            seen.add((link.rel, target_id))
            kept.append(ToolLink(rel=link.rel, target_id=target_id, arguments=link.arguments))
        resolved.append(replace(tool, links=tuple(kept)) if kept else tool)
    return resolved


def _target_id(
    check: Checker, catalog: str, by_name: Mapping[str, Tool], link: DeclaredLink
) -> str | None:
    """The target's tool id, or None (with the problem named) when it names nothing."""
    where = f"{link.label}.target"
    local = by_name.get(link.target)
    if local is None:
        other, slash, name = link.target.partition("/")
        if not slash or check_catalog_name(other) is not None or not name:
            check.add(
                where,
                f"no tool '{link.target[:80]}' in this catalog (a tool of another catalog is "
                "written '<catalog>/<tool>')",
            )
            return None
        if other != catalog:
            # Another catalog's tool: resolved when a schema is read, never trusted here.
            return link.target
        local = by_name.get(name)
        if local is None:
            check.add(where, f"no tool '{name[:80]}' in this catalog")
            return None
    inputs = _input_names(local.input_schema)
    for key in link.arguments:
        if key not in inputs:
            check.add(
                f"{link.label}.arguments.{key}",
                f"is not an input property of '{local.name}'",
            )
    return f"{catalog}/{local.name}"


def _input_names(schema: JsonObject) -> frozenset[str]:
    properties = schema.get("properties")
    return frozenset(properties) if isinstance(properties, dict) else frozenset()
