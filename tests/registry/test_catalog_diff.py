"""What replacing a catalog changes, decided without a store, a model or a writer."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from indexer.model import Catalog, Tool
from registry.catalog_diff import diff_catalog
from registry.store import StoredCatalog


def tool(name: str, description: str = "Looks something up.", catalog: str = "crm") -> Tool:
    return Tool(
        catalog=catalog,
        name=name,
        description=description,
        input_schema={"type": "object", "properties": {}},
    )


def catalog(*tools: Tool, name: str = "crm", title: str = "CRM") -> Catalog:
    return Catalog(name=name, description="Customers.", tools=tools, title=title)


def stored(version: Catalog) -> StoredCatalog:
    """`version` as the store holds it after registering it on its own."""
    first = diff_catalog(None, version)
    return StoredCatalog(catalog=version, revision=first.revision, tools=first.tools)


def test_a_new_catalog_adds_every_tool_at_revision_one() -> None:
    diff = diff_catalog(None, catalog(tool("find"), tool("create")))
    assert (diff.added, diff.updated, diff.removed, diff.unchanged) == (2, 0, 0, 0)
    assert (diff.revision, diff.replaces) == (1, 0)
    assert [t.revision for t in diff.tools] == [1, 1]
    assert [t.function_name for t in diff.tools] == ["crm__find", "crm__create"]
    assert not diff.changes_nothing


def test_the_same_catalog_again_changes_nothing() -> None:
    version = catalog(tool("find"), tool("create"))
    diff = diff_catalog(stored(version), version)
    assert diff.changes_nothing
    assert (diff.added, diff.updated, diff.removed, diff.unchanged) == (0, 0, 0, 2)


def test_an_unchanged_tool_keeps_its_revision_and_its_embedding() -> None:
    before = stored(catalog(tool("find"), tool("create")))
    known = set(diff_catalog(None, before.catalog).doc_hashes)
    after = catalog(tool("find"), tool("create", "Creates a customer record."))
    diff = diff_catalog(before, after)
    assert (diff.added, diff.updated, diff.removed, diff.unchanged) == (0, 1, 0, 1)
    assert [t.revision for t in diff.tools] == [1, 2]
    assert list(diff.missing_documents(known)) == [diff.doc_hashes[1]]


def test_a_tool_left_out_is_removed_and_a_new_one_added() -> None:
    before = stored(catalog(tool("find"), tool("create")))
    diff = diff_catalog(before, catalog(tool("find"), tool("archive")))
    assert (diff.added, diff.updated, diff.removed, diff.unchanged) == (1, 0, 1, 1)
    assert [t.tool.name for t in diff.tools] == ["find", "archive"]


def test_a_retitled_catalog_is_a_change_that_needs_every_vector_again() -> None:
    """The catalog title is part of each tool's document text, so no vector carries over,
    though every tool counts as unchanged and keeps its revision."""
    before = stored(catalog(tool("find"), tool("create")))
    known = set(diff_catalog(None, before.catalog).doc_hashes)
    diff = diff_catalog(before, catalog(tool("find"), tool("create"), title="Sales CRM"))
    assert diff.facts_changed
    assert not diff.changes_nothing
    assert diff.unchanged == 2
    assert [t.revision for t in diff.tools] == [1, 1]
    assert set(diff.missing_documents(known)) == set(diff.doc_hashes)


def test_a_new_version_string_is_a_change_without_new_vectors() -> None:
    before = stored(catalog(tool("find")))
    known = set(diff_catalog(None, before.catalog).doc_hashes)
    diff = diff_catalog(before, replace(before.catalog, version="2.0"))
    assert not diff.changes_nothing
    assert diff.missing_documents(known) == {}


def test_the_next_revision_follows_the_stored_one() -> None:
    before = replace(stored(catalog(tool("find"))), revision=7)
    diff = diff_catalog(before, catalog(tool("find", "Finds a customer by email.")))
    assert (diff.replaces, diff.revision) == (7, 8)


def test_a_function_name_another_catalog_owns_is_a_collision() -> None:
    diff = diff_catalog(None, catalog(tool("find")))
    [problem] = diff.collisions({"crm__find": tool("find", catalog="other")})
    assert "'find'" in problem
    assert "'other/find'" in problem


def test_a_catalogs_own_previous_tools_never_collide() -> None:
    diff = diff_catalog(None, catalog(tool("find")))
    assert diff.collisions({"crm__find": tool("find"), "crm__gone": tool("gone")}) == []


def test_two_tools_of_one_catalog_with_one_function_name_collide() -> None:
    # Function names are injective per id, so the clash is made by hand: the check must not
    # rely on that.
    diff = diff_catalog(None, catalog(tool("find"), tool("lookup")))
    clashing = replace(diff, tools=(diff.tools[0], replace(diff.tools[1], spelling="crm__find")))
    [problem] = clashing.collisions({})
    assert problem.startswith("tool 'lookup'")


NAMES = st.sets(st.sampled_from(["a", "b", "c", "d", "e", "f"]))
DESCRIPTIONS = st.sampled_from(["Finds things.", "Creates things."])


@st.composite
def versions(draw: st.DrawFn) -> Catalog:
    names = sorted(draw(NAMES))
    return catalog(*(tool(name, draw(DESCRIPTIONS)) for name in names))


@given(versions(), versions())
def test_every_old_and_new_tool_is_counted_once(old: Catalog, new: Catalog) -> None:
    diff = diff_catalog(stored(old), new)
    assert diff.added + diff.updated + diff.unchanged == len(new.tools)
    assert diff.updated + diff.unchanged + diff.removed == len(old.tools)
    assert diff.changes_nothing == (old == new)
    assert len(diff.tools) == len(diff.documents) == len(diff.doc_hashes) == len(new.tools)


@given(versions(), versions())
def test_only_added_or_updated_tools_take_the_new_revision(old: Catalog, new: Catalog) -> None:
    diff = diff_catalog(stored(old), new)
    previous = {t.name: t.content_hash() for t in old.tools}
    for entry in diff.tools:
        same = previous.get(entry.tool.name) == entry.tool.content_hash()
        assert entry.revision == (1 if same else 2)
