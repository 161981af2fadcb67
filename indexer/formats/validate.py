"""The one validator: reads a native catalog document, collecting every problem with the
entry it concerns and the rule it breaks, so a caller can fix a file in one pass."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from indexer.formats.rules import (
    MAX_ANNOTATIONS_BYTES,
    MAX_ITEM_CHARS,
    MAX_LIST_ITEMS,
    MAX_SCHEMA_BYTES,
    MAX_TOOL_NAME,
    MAX_TOOLS,
    CatalogError,
    check_catalog_name,
    one_line,
)
from indexer.model import Catalog, JsonObject, Tool

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

# Characters a tool name may not hold: controls (C0 and C1), format characters (bidi
# overrides and isolates, zero-width characters, the byte-order mark) and line and paragraph
# separators. Each makes a name read differently to a reviewer, a terminal and a model.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _hidden(name: str) -> bool:
    return any(unicodedata.category(c) in _HIDDEN_CATEGORIES for c in name)


@cache
def _drafts() -> tuple[type[Validator], ...]:
    """The drafts a schema without "$schema" is checked against, cheapest first.

    It is accepted if any draft in use by real servers accepts it: tool schemas in the wild
    still use draft-4 forms such as a boolean exclusiveMinimum; the newest draft's error is
    the one reported when none accepts. Acceptance by any is the same whatever the order, and
    the 2019-09 and 2020-12 meta-schemas ($dynamicRef over vocabularies) take five times as
    long to check a schema as draft 7's (3.7 ms against 0.7 ms for a bundled catalog's
    schema). jsonschema is imported here, at the first check: 0.07 s that a start-up over a
    store, which checks nothing, does not pay.
    """
    import jsonschema

    return (
        jsonschema.Draft7Validator,
        jsonschema.Draft4Validator,
        jsonschema.Draft202012Validator,
        jsonschema.Draft201909Validator,
    )


# Distinct schemas whose check is remembered (by the digest of their JSON text): the same
# schema is checked once, not once per catalog that carries it (copies of a catalog, servers
# sharing a schema, every unchanged tool of a catalog registered again).
_REMEMBERED_SCHEMAS = 8192


@dataclass(frozen=True)
class SchemaProblem:
    """Where a schema breaks its meta-schema, and how."""

    path: str
    message: str


class _CheckedSchemas:
    """A bounded, thread-safe memory of schema checks (registrations parse concurrently)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._results: OrderedDict[str, SchemaProblem | None] = OrderedDict()
        self._lock = threading.Lock()
        self.checks = 0  # meta-schema checks run (a metric, and what tests count)

    def problem(self, schema: JsonObject, text: str) -> SchemaProblem | None:
        key = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                return self._results[key]
        result = _schema_problem(schema)
        with self._lock:
            self.checks += 1
            self._results[key] = result
            if len(self._results) > self._size:
                self._results.popitem(last=False)
        return result


def _schema_problem(schema: JsonObject) -> SchemaProblem | None:
    import jsonschema

    newest = _drafts()[2]
    declared = "$schema" in schema
    drafts = (jsonschema.validators.validator_for(schema),) if declared else _drafts()
    errors: dict[type[Any], jsonschema.SchemaError] = {}
    for draft in drafts:
        try:
            draft.check_schema(schema)
        except jsonschema.SchemaError as exc:
            errors[draft] = exc
            continue
        return None
    error = errors.get(newest) or next(iter(errors.values()))
    path = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return SchemaProblem(path, one_line(error.message))


CHECKED_SCHEMAS = _CheckedSchemas(_REMEMBERED_SCHEMAS)


class Checker:
    """Collects problems while reading one catalog document."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, where: str, rule: str) -> None:
        self.problems.append(f"{where}: {rule}")

    def text(
        self,
        data: dict[str, Any],
        key: str,
        where: str,
        *,
        limit: int,
        required: bool = False,
        may_be_empty: bool = False,
        field: str | None = None,
    ) -> str:
        label = f"{where}.{field or key}" if where else field or key
        value = data.get(key)
        if value is None:
            if required:
                self.add(label, "is required")
            return ""
        if not isinstance(value, str):
            self.add(label, "must be a string")
            return ""
        if required and not may_be_empty and not value.strip():
            self.add(label, "must not be empty")
        if len(value) > limit:
            self.add(label, f"must be at most {limit} characters (has {len(value)})")
        return value

    def strings(
        self, value: object, label: str, *, pattern: re.Pattern[str] | None = None
    ) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.add(label, "must be a list of strings")
            return ()
        if len(value) > MAX_LIST_ITEMS:
            self.add(label, f"must have at most {MAX_LIST_ITEMS} items")
        for item in value:
            if pattern is not None and not pattern.fullmatch(item):
                self.add(label, f"'{item[:80]}' does not match {pattern.pattern}")
            elif len(item) > MAX_ITEM_CHARS:
                self.add(label, f"items must be at most {MAX_ITEM_CHARS} characters")
        return tuple(value)

    def schema(self, value: object, label: str, *, required: bool) -> JsonObject | None:
        if value is None:
            if required:
                self.add(label, "is required (a JSON Schema object)")
            return None
        if not isinstance(value, dict):
            self.add(label, "must be a JSON Schema object")
            return None
        if value.get("type") != "object":
            self.add(label, 'must be a JSON Schema with "type": "object"')
        try:
            text = json.dumps(value, ensure_ascii=False)
            size = len(text.encode())
        except (TypeError, ValueError) as exc:
            self.add(label, f"must be JSON-serialisable: {one_line(exc)}")
            return None
        if size > MAX_SCHEMA_BYTES:
            self.add(label, f"must be at most {MAX_SCHEMA_BYTES} bytes of JSON (has {size})")
            return None
        problem = CHECKED_SCHEMAS.problem(value, text)
        if problem is not None:
            self.add(label, f"is not a valid JSON Schema at {problem.path}: {problem.message}")
        return value

    def annotations(self, value: object, label: str) -> JsonObject:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(label, "must be an object")
            return {}
        if len(json.dumps(value, ensure_ascii=False)) > MAX_ANNOTATIONS_BYTES:
            self.add(label, f"must be at most {MAX_ANNOTATIONS_BYTES} bytes of JSON")
        return value

    def tool_name(self, value: object, label: str) -> str:
        if not isinstance(value, str) or not value:
            self.add(label, "is required (a non-empty string)")
            return ""
        if len(value) > MAX_TOOL_NAME:
            self.add(label, f"must be at most {MAX_TOOL_NAME} characters")
        if _hidden(value) or value != value.strip():
            self.add(
                label,
                "must not contain control, bidi, zero-width or line-separator characters or "
                "surrounding whitespace",
            )
        return value


def resolve_name(check: Checker, given: str, declared: object) -> str:
    if declared is not None and not isinstance(declared, str):
        check.add("name", "must be a string")
        declared = None
    name = given or (declared if isinstance(declared, str) else "")
    if given and isinstance(declared, str) and declared and declared != given:
        check.add("name", f"the content names catalog '{declared}' but '{given}' was requested")
    if not name:
        check.add("name", "is required")
        return ""
    rule = check_catalog_name(name)
    if rule:
        check.add("name", f"'{name[:80]}': {rule}")
    return name


def tool_entries(
    check: Checker, tools: object, sources: Sequence[str] = ()
) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(tools, list):
        check.add("tools", "is required (a list of tools)")
        return []
    if len(tools) > MAX_TOOLS:
        check.add("tools", f"must have at most {MAX_TOOLS} tools (has {len(tools)})")
        return []
    entries: list[tuple[str, dict[str, Any]]] = []
    for index, entry in enumerate(tools):
        if not isinstance(entry, dict):
            check.add(f"tools[{index}]", "must be an object")
            continue
        raw = entry.get("name")
        label = f"tools[{index}] '{raw}'" if isinstance(raw, str) and raw else f"tools[{index}]"
        entries.append((sources[index] if index < len(sources) else label, entry))
    return entries


def check_unique(check: Checker, tools: Iterable[Tool]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            check.add(f"tool '{tool.name}'", "tool names must be unique within a catalog")
        seen.add(tool.name)


def finish(check: Checker, name: str, catalog: Catalog) -> Catalog:
    check_unique(check, catalog.tools)
    if check.problems:
        raise CatalogError(name, check.problems, catalog)
    return catalog
