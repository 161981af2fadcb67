"""The native catalog format (`capreg: 1`), which every other format is converted to."""

from __future__ import annotations

from indexer.formats.links import DeclaredLink, read_links, resolve_links
from indexer.formats.rules import (
    MAX_CATALOG_DESCRIPTION,
    MAX_DESCRIPTION,
    MAX_TITLE,
    MAX_VERSION,
    NATIVE_VERSION,
    SCOPE,
    CatalogError,
    Converted,
)
from indexer.formats.validate import Checker, finish, resolve_name, tool_entries
from indexer.formats.workflows import read_workflows
from indexer.model import Catalog, CatalogFormat, Tool


def parse_native(document: object, given_name: str, foreign: Converted | None = None) -> Catalog:
    """Validates a native document (or a foreign one converted to it) into a `Catalog`."""
    check = Checker()
    if not isinstance(document, dict):
        raise CatalogError(given_name, ["a native catalog must be an object with 'capreg: 1'"])
    fields = foreign.fields if foreign else {}
    catalog_fields = foreign.catalog_fields if foreign else {}

    def src(key: str) -> str:
        return fields.get(key, key)

    def catalog_src(key: str) -> str:
        return catalog_fields.get(key, key)

    if foreign is not None:
        check.problems.extend(foreign.problems)
    elif document.get("capreg") != NATIVE_VERSION:
        check.add("capreg", f"must be {NATIVE_VERSION} (the native format version)")
    if foreign is not None and not given_name:
        check.add(
            "name",
            f"is required for an {foreign.noun or foreign.format} catalog (the CLI uses the file "
            "stem)",
        )
        name = ""
    else:
        name = resolve_name(check, given_name, document.get("name"))
    # Foreign formats have no required catalog description, as MCP has none.
    required = foreign is None
    description = check.text(
        document,
        "description",
        "",
        limit=MAX_CATALOG_DESCRIPTION,
        required=required,
        field=catalog_src("description"),
    )
    title = check.text(document, "title", "", limit=MAX_TITLE, field=catalog_src("title"))
    version = check.text(document, "version", "", limit=MAX_VERSION, field=catalog_src("version"))
    if isinstance(document.get("version"), int | float):
        version = str(document["version"])
    defaults = check.strings(
        document.get("default_scopes"), catalog_src("default_scopes"), pattern=SCOPE
    )
    tools = []
    declared: list[tuple[DeclaredLink, ...]] = []
    sources = foreign.sources if foreign else ()
    for label, entry in tool_entries(check, document.get("tools"), sources):
        declared.append(read_links(check, entry.get("links"), f"{label}.{src('links')}"))
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
                examples=check.strings(entry.get("examples"), f"{label}.{src('examples')}"),
            )
        )
    resolved = tuple(resolve_links(check, name, tools, declared))
    catalog = Catalog(
        name=name,
        description=description,
        # Targets are resolved once every tool is known: a link may point further down.
        tools=resolved,
        title=title,
        version=version,
        default_scopes=frozenset(defaults),
        format=foreign.format if foreign else CatalogFormat.NATIVE,
        workflows=read_workflows(
            check,
            document.get("workflows"),
            {tool.name: tool for tool in resolved},
            catalog_src("workflows"),
        ),
    )
    return finish(check, name or given_name, catalog)
