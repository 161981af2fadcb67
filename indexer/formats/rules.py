"""What every catalog format shares: the size limits, name rules, the error and the converted form.

A leaf: the converters and the validator import it; it imports only the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from indexer.errors import CapregError
from indexer.model import Catalog, CatalogFormat

FORMATS = tuple(CatalogFormat)
__all__ = [
    "FORMATS",
    "CatalogError",
    "CatalogFormat",
    "Converted",
    "check_catalog_name",
    "one_line",
]
NATIVE_VERSION = 1

# Patterns are matched whole (fullmatch): "$" would accept a trailing newline.
CATALOG_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?")
SCOPE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
# A link's relation: lower-case, so "Read" and "read" cannot be two relations.
LINK_REL = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
# Workflow and state names: lower-case words, as agents pass them back verbatim.
WORKFLOW_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")

MAX_CONTENT_BYTES = 32 * 1024 * 1024
MAX_TOOLS = 50_000
MAX_TOOL_NAME = 128
# Real servers write long descriptions (AWS CloudWatch's get_metric_data: 8,879 characters; Neon's
# compare_database_schema: 10,574), so a catalog accepts up to 64 KiB of one. Search reads the
# first EMBEDDED_DESCRIPTION characters (indexer.model), and lint and registration warn past it.
MAX_DESCRIPTION = 65_536
MAX_CATALOG_DESCRIPTION = 2_000
MAX_TITLE = 200
MAX_VERSION = 64
MAX_SCHEMA_BYTES = 64 * 1024
MAX_ANNOTATIONS_BYTES = 8 * 1024
MAX_LIST_ITEMS = 32
MAX_ITEM_CHARS = 500
MAX_REPORTED = 20
MAX_WORKFLOWS = 32
MAX_STATES = 64
MAX_TRANSITIONS = 512

# capreg's extras in an MCP tools/list result ride in MCP's own `_meta` fields.
META_TITLE = "capreg/title"
META_DESCRIPTION = "capreg/description"
META_VERSION = "capreg/version"
META_DEFAULT_SCOPES = "capreg/default_scopes"
META_SCOPES = "capreg/required_scopes"
META_TAGS = "capreg/tags"
META_EXAMPLES = "capreg/examples"
META_LINKS = "capreg/links"
META_WORKFLOWS = "capreg/workflows"


class CatalogError(CapregError, ValueError):
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


@dataclass(kw_only=True)
class Converted:
    """A foreign catalog as a native document, remembering where each tool came from.

    `sources[i]` labels `document["tools"][i]` as its own format does ("paths./pets.get"), and
    `fields` maps native field names to the source's ("input_schema" -> "parameters"), so a
    validation problem names the entry and field the author wrote.
    """

    format: CatalogFormat
    document: dict[str, Any]
    sources: list[str]
    fields: dict[str, str] = field(default_factory=dict)
    # Problems the converter found itself (an unresolvable $ref, an entry of the wrong type).
    problems: list[str] = field(default_factory=list)
    # Catalog-level native fields as the source names them ("description" ->
    # "_meta.capreg/description").
    catalog_fields: dict[str, str] = field(default_factory=dict)
    # How messages name the format ("MCP tools/list"); the format's name when empty.
    noun: str = ""


def check_catalog_name(name: str) -> str | None:
    """The rule a catalog name breaks, or None when it is valid."""
    if not CATALOG_NAME.fullmatch(name):
        return (
            "name must be 1-64 letters, digits, '-' or '_', starting and ending with a letter "
            "or digit"
        )
    if "__" in name:
        return "name must not contain '__' (it separates catalog and tool in function names)"
    return None


def one_line(error: object) -> str:
    """An error's text on one line, at most 300 characters (it is quoted inside a problem)."""
    return " ".join(str(error).split())[:300]
