"""The writer's catalogs in memory, with what it looks up about them on every change: who owns
each function name, which source each catalog was registered from, and when each scope set
last changed."""

from __future__ import annotations

from collections.abc import Iterable

from indexer.model import Tool
from registry.indexing import LiveCatalog
from registry.store.tool_texts import retire


def scope_sets(entry: LiveCatalog) -> set[frozenset[str]]:
    """The required-scope sets guarding a catalog's tools (who can see a change to it)."""
    return set(entry.required_scopes)


class LiveCatalogs:
    """The live catalogs by name, and the indexes kept over them."""

    def __init__(self, catalogs: Iterable[LiveCatalog] = (), generation: int = 0) -> None:
        self._by_name = {c.stored.catalog.name: c for c in catalogs}
        live = self._by_name.values()
        # Each catalog's view, by name: what a snapshot publishes, copied whole per change
        # instead of gathered catalog by catalog (121,557 of them at a million tools).
        self.views = {name: c.view for name, c in self._by_name.items()}
        # Function name -> the tool that has it, for the names that are not plain (shortened
        # and hashed, `indexer.naming`: few): collisions are checked in O(tools registered),
        # not O(tools stored). A plain `<catalog>__<tool>` needs no entry: it splits at its
        # first `__` into its own catalog (no catalog name holds `__`), and so does a hashed
        # name whose catalog part is whole (one cut short holds no `__`), so two catalogs can
        # only share a hashed name; within a catalog `CatalogDiff.collisions` compares them
        # all. An entry per tool was a string and a slot per tool (decision 0082).
        self.function_owners: dict[str, Tool] = {
            t.spelling: t.tool for entry in live for t in entry.stored.tools if t.spelling
        }
        # Digest of (name, format, bytes) of each live catalog's last registration: an
        # identical resubmission (a periodic sync) is answered without parsing. A file
        # registered before a restart is recognised without parsing it again.
        self._source_of = {
            name: c.stored.source_digest
            for name, c in self._by_name.items()
            if c.stored.source_digest
        }
        self._sources = {digest: name for name, digest in self._source_of.items()}
        # Per required-scope set: the generation of the last change to a tool guarded by it
        # (a caller's view generation is the latest among the sets it may see). History
        # before `generation` is unknown: every scope set counts as changed then.
        self.touched = {s: generation for c in live for s in scope_sets(c)}

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> LiveCatalog | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def catalogs(self) -> list[LiveCatalog]:
        return list(self._by_name.values())

    def registered_from(self, digest: str) -> LiveCatalog | None:
        """The live catalog last registered from the source with this digest, if any."""
        name = self._sources.get(digest)
        return self._by_name.get(name) if name is not None else None

    def remember_source(self, name: str, digest: str) -> None:
        """`name` was last registered from the source with this digest."""
        self.forget_source(name)
        if digest:
            self._sources[digest] = name
            self._source_of[name] = digest

    def forget_source(self, name: str) -> None:
        digest = self._source_of.pop(name, None)
        if digest is not None:
            self._sources.pop(digest, None)

    def take(self, current: LiveCatalog | None, entry: LiveCatalog, generation: int) -> None:
        """`entry` replaces `current` (None: a new catalog) at `generation`."""
        name = entry.stored.catalog.name
        if current is not None:
            self._forget_functions(current)
        self.remember_source(name, entry.stored.source_digest)
        self._by_name[name] = entry
        self.views[name] = entry.view
        self.function_owners.update((t.spelling, t.tool) for t in entry.stored.tools if t.spelling)
        before = scope_sets(current) if current is not None else set()
        self._touch(before | scope_sets(entry), generation)

    def drop(self, current: LiveCatalog, generation: int) -> None:
        """`current` is deleted at `generation`. Its tools are no longer read from the store
        (a catalog stored anew under its name is another incarnation, which their reads
        would not find anyway: `registry.store.tool_texts`)."""
        retire(t.tool for t in current.stored.tools)
        name = current.stored.catalog.name
        del self._by_name[name]
        del self.views[name]
        self.forget_source(name)
        self._forget_functions(current)
        self._touch(scope_sets(current), generation)

    def _touch(self, scopes: set[frozenset[str]], generation: int) -> None:
        for scope_set in scopes:
            self.touched[scope_set] = generation

    def _forget_functions(self, live: LiveCatalog) -> None:
        for stored in live.stored.tools:
            if stored.spelling and self.function_owners.get(stored.spelling) is stored.tool:
                del self.function_owners[stored.spelling]
