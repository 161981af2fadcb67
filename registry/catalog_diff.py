"""What replacing a catalog changes: its tools added, updated, removed and unchanged, each
tool's revision, and which tool documents need a vector (decided here, stored elsewhere)."""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass

from indexer.model import Catalog, Tool
from indexer.naming import function_name
from indexer.retrieval.document import document_hash, document_text
from registry.store.base import StoredCatalog, StoredTool
from registry.store.tool_texts import read_ahead


@dataclass(frozen=True, kw_only=True)
class CatalogDiff:
    """A catalog against the stored version it would replace (none: a new catalog)."""

    catalog: Catalog
    # The stored revision being replaced; 0 for a new catalog.
    replaces: int
    # The revision the replacement is stored as.
    revision: int
    # In catalog order; an unchanged tool keeps the revision its content last changed in.
    tools: tuple[StoredTool, ...]
    # Each tool's document text and its hash, in the same order.
    documents: tuple[str, ...]
    doc_hashes: tuple[str, ...]
    added: int
    updated: int
    removed: int
    unchanged: int
    # Title, description, version, format, default scopes or workflows differ (always true
    # for a new catalog): a catalog-level change is a change even when no tool changed.
    facts_changed: bool

    @property
    def changes_nothing(self) -> bool:
        return not (self.added or self.updated or self.removed or self.facts_changed)

    def missing_documents(self, known: Container[str]) -> dict[str, str]:
        """Document hash -> text for the documents without a vector in `known`: a tool whose
        document text is unchanged keeps its vector."""
        return {
            doc_hash: text
            for doc_hash, text in zip(self.doc_hashes, self.documents, strict=True)
            if doc_hash not in known
        }

    def collisions(self, owners: Mapping[str, Tool]) -> list[str]:
        """Problems, one per tool whose function name is already another tool's: in another
        catalog (`owners`: function name -> tool, for the names that are not plain; a plain
        name is its own catalog's alone: `LiveCatalogs.function_owners`) or earlier in this
        one."""
        problems = []
        seen: dict[str, str] = {}
        for stored in self.tools:
            tool, fname = stored.tool, stored.function_name
            owner = owners.get(fname)
            # This catalog's own previous tools are being replaced: they cannot collide.
            taken = owner.id if owner is not None and owner.catalog != self.catalog.name else None
            other = taken or seen.get(fname)
            if other is not None and other != tool.id:
                problems.append(
                    f"tool '{tool.name}': its function name '{fname}' is already used by "
                    f"'{other}'; rename the tool"
                )
            seen[fname] = tool.id
        return problems


def diff_catalog(previous: StoredCatalog | None, catalog: Catalog) -> CatalogDiff:
    """What storing `catalog` in place of `previous` changes."""
    old = {t.tool.name: t for t in previous.tools} if previous is not None else {}
    # The stored tools' schemas are compared below: read in one query, not one a tool.
    kept = {tool.name for tool in catalog.tools}
    read_ahead(t.tool for name, t in old.items() if name in kept)
    revision = previous.revision + 1 if previous is not None else 1
    added = updated = unchanged = 0
    tools = []
    for tool in catalog.tools:
        before = old.get(tool.name)
        if before is None:
            added += 1
            since = revision
        elif before.tool.content_hash() != tool.content_hash():
            updated += 1
            since = revision
        else:
            unchanged += 1
            since = before.revision
        name = function_name(catalog.name, tool.name)
        tools.append(StoredTool.named(tool, name, since))
    documents = tuple(document_text(tool, catalog.title) for tool in catalog.tools)
    return CatalogDiff(
        catalog=catalog,
        replaces=previous.revision if previous is not None else 0,
        revision=revision,
        tools=tuple(tools),
        documents=documents,
        doc_hashes=tuple(document_hash(text) for text in documents),
        added=added,
        updated=updated,
        removed=len(old.keys() - kept),
        unchanged=unchanged,
        facts_changed=previous is None or _facts(previous.catalog) != _facts(catalog),
    )


def _facts(catalog: Catalog) -> tuple[object, ...]:
    """What a catalog says besides its tools."""
    return (
        catalog.title,
        catalog.description,
        catalog.version,
        catalog.format,
        sorted(catalog.default_scopes),
        [w.to_json() for w in catalog.workflows],
    )
