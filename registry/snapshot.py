"""The immutable snapshot a read answers from: every catalog's facts and the searchable index
of one generation, with the schemas, listings and workflow moves a caller may see in it.

The writer builds one for every change and publishes it whole (registry/reader.py); nothing in
it changes after that, so whatever one read takes from it belongs together.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from indexer.formats.lint import discovery_warnings
from indexer.model import Catalog, Workflow
from indexer.retrieval.tool_index import IndexedTool, ToolIndex
from registry.auth.scopes import Grants
from registry.errors import CatalogNotFound, InvalidRequest, ToolsNotFound
from registry.wire import MAX_IDS, MAX_TOOL_ID_CHARS
from registry.workflows import Affordances, affordances, check_request, not_found, workflow_id

# What a caller without restrictions (local development mode, internal tools) sees.
ALL = Grants.parse(["*"])


@dataclass(frozen=True, kw_only=True)
class CatalogSummary:
    name: str
    title: str
    description: str
    version: str
    revision: int
    tool_count: int
    workflows: tuple[Workflow, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class CatalogView:
    """What a snapshot knows of one catalog: its facts and how many tools each scope set
    guards (a visible count costs one check per distinct set, not per tool)."""

    name: str
    title: str
    description: str
    version: str
    revision: int
    scope_counts: Mapping[frozenset[str], int]
    workflows: tuple[Workflow, ...] = ()
    # The catalog itself, for what is computed only when asked (lint warnings).
    source: Catalog | None = field(default=None, repr=False, compare=False)

    def visible_count(self, viewer: Grants) -> int:
        return sum(n for scopes, n in self.scope_counts.items() if viewer.allows(scopes))

    def sees_whole(self, viewer: Grants) -> bool:
        return self.visible_count(viewer) == sum(self.scope_counts.values())

    @cached_property
    def warnings(self) -> tuple[str, ...]:
        """What `capreg lint` warns about (computed on first use: listings rarely ask)."""
        return tuple(discovery_warnings(self.source)) if self.source is not None else ()


@dataclass(frozen=True)
class Snapshot:
    """The searchable index and the catalog listing of one generation, never mutated."""

    index: ToolIndex
    catalogs: Mapping[str, CatalogView]
    # Per required-scope set: the generation of the last change to a tool it guards.
    touched: Mapping[frozenset[str], int] = field(default_factory=dict)
    # Each caller's view generation, once computed (the snapshot never changes).
    _generations: dict[Grants, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def generation(self) -> int:
        """The registry's generation (internal: cache keys, read-your-writes)."""
        return self.index.generation

    def view_generation(self, viewer: Grants) -> int:
        """The generation a caller is told: the last change to anything it may see, so a
        change it may not see is not revealed by a new number."""
        if viewer == ALL:
            return self.generation
        found = self._generations.get(viewer)
        if found is None:
            seen = [g for scopes, g in self.touched.items() if viewer.allows(scopes)]
            found = self._generations.setdefault(viewer, max(seen, default=0))
        return found

    def catalog_summaries(
        self, viewer: Grants = ALL, *, with_warnings: bool = False
    ) -> list[CatalogSummary]:
        """Catalogs with at least one tool the caller may see, with visible counts; with
        `with_warnings`, the lint warnings of each catalog the caller sees whole (a warning
        names tools, which a partial viewer may not know of)."""
        result = []
        for name in sorted(self.catalogs):
            view = self.catalogs[name]
            count = view.visible_count(viewer)
            # An empty catalog is listed only to callers who may see everything.
            if count or viewer == ALL:
                warned = with_warnings and view.sees_whole(viewer)
                result.append(
                    CatalogSummary(
                        name=name,
                        title=view.title,
                        description=view.description,
                        version=view.version,
                        revision=view.revision,
                        tool_count=count,
                        workflows=view.workflows,
                        warnings=view.warnings if warned else (),
                    )
                )
        return result

    def visible_workflows(self, viewer: Grants) -> dict[str, tuple[str, Workflow]]:
        """Workflow id -> (catalog, workflow), for the catalogs the caller may see."""
        return {
            workflow_id(name, workflow.name): (name, workflow)
            for name, view in self.catalogs.items()
            if view.workflows and view.visible_count(viewer)
            for workflow in view.workflows
        }

    def affordances(
        self,
        wanted: str,
        state: str = "",
        tool: str = "",
        viewer: Grants = ALL,
        arguments: str = "",
    ) -> Affordances:
        """The moves legal for the caller in `state` of workflow `wanted` (see
        registry.workflows.affordances)."""
        check_request(wanted, state, tool, arguments)
        catalog, _, name = wanted.partition("/")
        view = self.catalogs.get(catalog)
        found = next((w for w in view.workflows if w.name == name), None) if view else None
        if view is None or found is None or not view.visible_count(viewer):
            raise not_found(wanted, self.visible_workflows(viewer))
        return affordances(
            wanted,
            found,
            catalog=catalog,
            state=state,
            tool=tool,
            arguments=arguments,
            lookup=lambda tool_id: self.index.get(tool_id, viewer.allows),
            viewer=viewer,
        )

    def close_catalogs(self, name: str, viewer: Grants) -> list[str]:
        names = [c.name for c in self.catalog_summaries(viewer)]
        return difflib.get_close_matches(name, names, n=3, cutoff=0.5)

    def require_catalogs(self, names: Iterable[str], viewer: Grants) -> list[str]:
        """`names` sorted and unique; each must hold a tool the caller may see."""
        wanted = sorted(set(names))
        for name in wanted:
            view = self.catalogs.get(name)
            if view is None or not view.visible_count(viewer):
                raise CatalogNotFound(name, self.close_catalogs(name, viewer))
        return wanted

    def schemas(self, ids: Sequence[str], viewer: Grants = ALL) -> list[IndexedTool]:
        """The tools for `ids` in request order (duplicates once), each with the links the
        caller may follow; every id must be visible."""
        if len(ids) > MAX_IDS:
            raise InvalidRequest(f"ids: at most {MAX_IDS} per call (got {len(ids)})")
        for position, tool_id in enumerate(ids):
            if len(tool_id) > MAX_TOOL_ID_CHARS:
                raise InvalidRequest(
                    f"ids[{position}]: a tool id is at most {MAX_TOOL_ID_CHARS} characters "
                    f"(got {len(tool_id)})"
                )
        unique = list(dict.fromkeys(ids))
        if not unique:
            raise InvalidRequest("ids must name at least one tool id ('<catalog>/<tool>')")
        found = {tool_id: self.index.get(tool_id, viewer.allows) for tool_id in unique}
        missing = {
            # A bare name is looked up as a tool name in any catalog ("/get_employee").
            i: self.index.suggestions(i if "/" in i else f"/{i}", viewer.allows)
            for i, entry in found.items()
            if entry is None
        }
        if missing:
            raise ToolsNotFound(missing)
        return [
            self.with_visible_links(entry, viewer) for entry in found.values() if entry is not None
        ]

    def with_visible_links(self, entry: IndexedTool, viewer: Grants = ALL) -> IndexedTool:
        """`entry` with only the links the caller may follow: to a tool of this snapshot it
        may see. A link to an invisible tool is dropped exactly like one to a missing tool,
        so the answer is the same whether that tool exists or not."""
        kept = tuple(link for link in entry.links if self.index.get(link.target_id, viewer.allows))
        return entry if len(kept) == len(entry.links) else replace(entry, link_source=kept)
