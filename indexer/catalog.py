"""Catalog files (native, MCP tools/list, OpenAI, Anthropic, OpenAPI) -> validated `Catalog`s.

The whole catalog is checked before anything is returned: every problem is collected with
the entry it concerns and the rule it breaks, so a caller can fix a file in one pass. Foreign
formats are converted to a native document first, so one validator (and one set of size
limits) serves every format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import yaml

from indexer.model import Catalog, JsonObject, Tool

FORMATS = ("native", "mcp", "openai", "anthropic", "openapi")
# Converted to a native document (see `Converted`) before validation.
FOREIGN_FORMATS = ("openai", "anthropic", "openapi")
NATIVE_VERSION = 1

CATALOG_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$")
SCOPE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

MAX_CONTENT_BYTES = 32 * 1024 * 1024
MAX_TOOLS = 50_000
MAX_TOOL_NAME = 128
MAX_DESCRIPTION = 8_192
MAX_CATALOG_DESCRIPTION = 2_000
MAX_TITLE = 200
MAX_VERSION = 64
MAX_SCHEMA_BYTES = 64 * 1024
MAX_ANNOTATIONS_BYTES = 8 * 1024
MAX_LIST_ITEMS = 32
MAX_ITEM_CHARS = 500
MAX_REPORTED = 20

# capreg's extras in an MCP tools/list result ride in MCP's own `_meta` fields.
META_TITLE = "capreg/title"
META_DESCRIPTION = "capreg/description"
META_VERSION = "capreg/version"
META_DEFAULT_SCOPES = "capreg/default_scopes"
META_SCOPES = "capreg/required_scopes"
META_TAGS = "capreg/tags"
META_EXAMPLES = "capreg/examples"


class CatalogError(ValueError):
    """A catalog that cannot be registered; `problems` lists every rule it breaks."""

    def __init__(self, catalog: str, problems: list[str], parsed: Catalog | None = None) -> None:
        self.catalog = catalog
        self.problems = problems
        # What could be read despite the problems: `capreg lint` still checks it for warnings.
        self.parsed = parsed
        shown = "; ".join(problems[:MAX_REPORTED])
        more = len(problems) - MAX_REPORTED
        suffix = f"; and {more} more" if more > 0 else ""
        label = f"catalog '{catalog}'" if catalog else "catalog"
        super().__init__(f"{label}: {shown}{suffix}")


@dataclass
class Converted:
    """A foreign catalog as a native document, remembering where each tool came from.

    `sources[i]` labels `document["tools"][i]` as its own format does ("paths./pets.get"), and
    `fields` maps native field names to the source's ("input_schema" -> "parameters"), so a
    validation problem names the entry and field the author wrote.
    """

    format: str
    document: dict[str, Any]
    sources: list[str]
    fields: dict[str, str] = field(default_factory=dict)
    # Problems the converter found itself (an unresolvable $ref, an entry of the wrong type).
    problems: list[str] = field(default_factory=list)


def check_catalog_name(name: str) -> str | None:
    """The rule a catalog name breaks, or None when it is valid."""
    if not CATALOG_NAME.match(name):
        return (
            "name must be 1-64 letters, digits, '-' or '_', starting and ending with a letter "
            "or digit"
        )
    if "__" in name:
        return "name must not contain '__' (it separates catalog and tool in function names)"
    return None


def parse_catalog(content: str, *, name: str = "", fmt: str = "") -> Catalog:
    """Parses and validates catalog file text; raises CatalogError naming every problem."""
    if len(content.encode("utf-8", errors="replace")) > MAX_CONTENT_BYTES:
        raise CatalogError(name, [f"content is larger than {MAX_CONTENT_BYTES} bytes"])
    try:
        document = _load_document(content)
    except (ValueError, yaml.YAMLError) as exc:
        raise CatalogError(name, [f"content is not valid JSON or YAML: {_one_line(exc)}"]) from exc
    fmt = detect_format(document, name) if fmt in ("", "auto") else fmt
    if fmt == "native":
        return _parse_native(document, name)
    if fmt == "mcp":
        return _parse_mcp(document, name)
    if fmt in FOREIGN_FORMATS:
        converted = _convert(document, fmt)
        return _parse_native(converted.document, name, converted)
    raise CatalogError(name, [f"format '{fmt}' is not one of: auto, {', '.join(FORMATS)}"])


def detect_format(document: object, name: str = "") -> str:
    """The format of a loaded document, from its shape alone (see docs/catalog-format.md)."""
    if isinstance(document, dict):
        if "capreg" in document:
            return "native"
        if "openapi" in document:
            return "openapi"
        if "swagger" in document:
            raise CatalogError(
                name, ["swagger: Swagger 2.0 is not supported; convert it to OpenAPI 3 first"]
            )
        for key in ("tools", "functions"):
            entries = document.get(key)
            if isinstance(entries, list) and "name" not in document:
                # An empty or unrecognisable list stays MCP, whose parser says what is missing.
                return _entry_format(entries) or ("mcp" if key == "tools" else "openai")
    if isinstance(document, list):
        fmt = _entry_format(document)
        if fmt in FOREIGN_FORMATS:
            return fmt
    raise CatalogError(
        name,
        [
            "cannot tell the format: a native catalog has a top-level 'capreg: 1'; an MCP "
            "tools/list result is an object with a 'tools' list of {name, inputSchema}; an "
            "OpenAI list holds {type: function, function: {...}} or {name, parameters}; an "
            "Anthropic list holds {name, input_schema}; an OpenAPI document has 'openapi: 3.x'"
        ],
    )


def _entry_format(entries: Sequence[object]) -> str | None:
    """The format a list of tool entries is written in, judged by its first object."""
    entry = next((e for e in entries if isinstance(e, dict)), None)
    if entry is None:
        return None
    if "inputSchema" in entry:
        return "mcp"
    if "input_schema" in entry:
        return "anthropic"
    if entry.get("type") == "function" or "function" in entry or "parameters" in entry:
        return "openai"
    return None


def _convert(document: object, fmt: str) -> Converted:
    # Imported here because the converters import this module's limits and `Converted`.
    from indexer import function_formats, openapi

    if fmt == "openapi":
        return openapi.convert(document)
    return function_formats.convert(document, fmt)


def _load_document(content: str) -> object:
    if content.lstrip().startswith(("{", "[")):
        return json.loads(content)
    return yaml.safe_load(content)


def _one_line(error: object) -> str:
    return " ".join(str(error).split())[:300]


# Without "$schema", a schema is accepted if any draft in use by real servers accepts it:
# tool schemas in the wild still use draft-4 forms such as a boolean exclusiveMinimum.
_DRAFTS = (
    jsonschema.Draft202012Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft4Validator,
)


def _schema_error(schema: JsonObject) -> jsonschema.SchemaError | None:
    declared = "$schema" in schema
    drafts = (jsonschema.validators.validator_for(schema),) if declared else _DRAFTS
    first: jsonschema.SchemaError | None = None
    for draft in drafts:
        try:
            draft.check_schema(schema)
        except jsonschema.SchemaError as exc:
            first = first or exc
            continue
        return None
    return first


class _Checker:
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
            if pattern is not None and not pattern.match(item):
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
            size = len(json.dumps(value, ensure_ascii=False).encode())
        except (TypeError, ValueError) as exc:
            self.add(label, f"must be JSON-serialisable: {_one_line(exc)}")
            return None
        if size > MAX_SCHEMA_BYTES:
            self.add(label, f"must be at most {MAX_SCHEMA_BYTES} bytes of JSON (has {size})")
            return None
        error = _schema_error(value)
        if error is not None:
            path = "/".join(str(p) for p in error.absolute_path) or "(root)"
            self.add(label, f"is not a valid JSON Schema at {path}: {_one_line(error.message)}")
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
        if _CONTROL.search(value) or value != value.strip():
            self.add(label, "must not contain control characters or surrounding whitespace")
        return value


def _resolve_name(check: _Checker, given: str, declared: object) -> str:
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


def _tool_entries(
    check: _Checker, tools: object, sources: Sequence[str] = ()
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


def _check_unique(check: _Checker, tools: Iterable[Tool]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            check.add(f"tool '{tool.name}'", "tool names must be unique within a catalog")
        seen.add(tool.name)


def _finish(check: _Checker, name: str, catalog: Catalog) -> Catalog:
    _check_unique(check, catalog.tools)
    if check.problems:
        raise CatalogError(name, check.problems, catalog)
    return catalog


def _parse_native(document: object, given_name: str, foreign: Converted | None = None) -> Catalog:
    check = _Checker()
    if not isinstance(document, dict):
        raise CatalogError(given_name, ["a native catalog must be an object with 'capreg: 1'"])
    fields = foreign.fields if foreign else {}

    def src(key: str) -> str:
        return fields.get(key, key)

    if foreign is not None:
        check.problems.extend(foreign.problems)
    elif document.get("capreg") != NATIVE_VERSION:
        check.add("capreg", f"must be {NATIVE_VERSION} (the native format version)")
    if foreign is not None and not given_name:
        check.add(
            "name", f"is required for an {foreign.format} catalog (the CLI uses the file stem)"
        )
        name = ""
    else:
        name = _resolve_name(check, given_name, document.get("name"))
    # Foreign formats have no required catalog description, as MCP has none.
    required = foreign is None
    description = check.text(
        document, "description", "", limit=MAX_CATALOG_DESCRIPTION, required=required
    )
    title = check.text(document, "title", "", limit=MAX_TITLE)
    version = check.text(document, "version", "", limit=MAX_VERSION)
    if isinstance(document.get("version"), int | float):
        version = str(document["version"])
    defaults = check.strings(document.get("default_scopes"), "default_scopes", pattern=SCOPE)
    tools = []
    sources = foreign.sources if foreign else ()
    for label, entry in _tool_entries(check, document.get("tools"), sources):
        tools.append(
            Tool(
                catalog=name,
                name=check.tool_name(entry.get("name"), f"{label}.{src('name')}"),
                # Required, but may be empty: capreg lint warns about empty descriptions.
                description=check.text(
                    entry,
                    "description",
                    label,
                    limit=MAX_DESCRIPTION,
                    required=foreign is None,
                    may_be_empty=True,
                    field=src("description"),
                ),
                input_schema=check.schema(
                    entry.get("input_schema"), f"{label}.{src('input_schema')}", required=True
                )
                or {},
                output_schema=check.schema(
                    entry.get("output_schema"), f"{label}.{src('output_schema')}", required=False
                ),
                annotations=check.annotations(
                    entry.get("annotations"), f"{label}.{src('annotations')}"
                ),
                title=check.text(entry, "title", label, limit=MAX_TITLE),
                tags=check.strings(entry.get("tags"), f"{label}.{src('tags')}"),
                scopes=frozenset(
                    check.strings(
                        entry.get("required_scopes"),
                        f"{label}.{src('required_scopes')}",
                        pattern=SCOPE,
                    )
                ),
                examples=check.strings(entry.get("examples"), f"{label}.examples"),
            )
        )
    catalog = Catalog(
        name=name,
        description=description,
        tools=tuple(tools),
        title=title,
        version=version,
        default_scopes=frozenset(defaults),
        format=foreign.format if foreign else "native",
    )
    return _finish(check, name or given_name, catalog)


def _parse_mcp(document: object, given_name: str) -> Catalog:
    check = _Checker()
    if not isinstance(document, dict):
        raise CatalogError(given_name, ["an MCP tools/list result must be an object"])
    if not given_name:
        check.add("name", "is required for an MCP tools/list catalog (the CLI uses the file stem)")
    name = _resolve_name(check, given_name, None) if given_name else ""
    meta = document.get("_meta") or {}
    if not isinstance(meta, dict):
        check.add("_meta", "must be an object")
        meta = {}
    tools = []
    for label, entry in _tool_entries(check, document.get("tools")):
        tool_meta = entry.get("_meta") or {}
        if not isinstance(tool_meta, dict):
            check.add(f"{label}._meta", "must be an object")
            tool_meta = {}
        tools.append(
            Tool(
                catalog=name,
                name=check.tool_name(entry.get("name"), f"{label}.name"),
                # MCP makes a description optional; capreg lint warns about missing ones.
                description=check.text(entry, "description", label, limit=MAX_DESCRIPTION),
                input_schema=check.schema(
                    entry.get("inputSchema"), f"{label}.inputSchema", required=True
                )
                or {},
                output_schema=check.schema(
                    entry.get("outputSchema"), f"{label}.outputSchema", required=False
                ),
                annotations=check.annotations(entry.get("annotations"), f"{label}.annotations"),
                title=check.text(entry, "title", label, limit=MAX_TITLE),
                tags=check.strings(tool_meta.get(META_TAGS), f"{label}._meta.{META_TAGS}"),
                scopes=frozenset(
                    check.strings(
                        tool_meta.get(META_SCOPES), f"{label}._meta.{META_SCOPES}", pattern=SCOPE
                    )
                ),
                examples=check.strings(
                    tool_meta.get(META_EXAMPLES), f"{label}._meta.{META_EXAMPLES}"
                ),
            )
        )
    catalog = Catalog(
        name=name,
        description=check.text(meta, META_DESCRIPTION, "_meta", limit=MAX_CATALOG_DESCRIPTION),
        tools=tuple(tools),
        title=check.text(meta, META_TITLE, "_meta", limit=MAX_TITLE),
        version=check.text(meta, META_VERSION, "_meta", limit=MAX_VERSION),
        default_scopes=frozenset(
            check.strings(
                meta.get(META_DEFAULT_SCOPES), f"_meta.{META_DEFAULT_SCOPES}", pattern=SCOPE
            )
        ),
        format="mcp",
    )
    return _finish(check, name or given_name, catalog)
