"""Scopes and the result cache inside the engine: every path obeys visibility."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.auth.scopes import Grants
from registry.config import SearchSettings
from registry.core import ALL, Registry
from registry.errors import ToolsNotFound
from registry.store import SqliteStore
from tests.conftest import CATALOGS, CountingEmbedder, copy_db

QUERIES = [
    "open a support ticket for a customer",
    "book time off",
    "pay a vendor invoice",
    "deploy the new release",
    "send an email to the team",
    "who is my manager",
    "export customer records",
    "reset a password",
    "sign a contract",
    "list recent alerts",
]


def _sample_scopes() -> list[str]:
    scopes: set[str] = set()
    for path in CATALOGS.iterdir():
        document = yaml.safe_load(path.read_text())
        meta = document.get("_meta") or {}
        scopes.update(document.get("default_scopes") or meta.get("capreg/default_scopes") or [])
        for tool in document["tools"]:
            tool_meta = tool.get("_meta") or {}
            scopes.update(
                tool.get("required_scopes") or tool_meta.get("capreg/required_scopes") or []
            )
    return sorted(scopes)


SCOPES = _sample_scopes()
PATTERNS = SCOPES + sorted({s.split(":")[0] + ":*" for s in SCOPES}) + ["*"]
grants = st.lists(st.sampled_from(PATTERNS), max_size=6).map(Grants.parse)
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def pair(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> Iterator[tuple[Registry, Registry]]:
    """The same catalogs twice: with the result cache, and with it turned off."""
    store = SqliteStore(copy_db(sample_db, tmp_path))
    cached = Registry(store, embedder)
    uncached = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
    cached.load()
    uncached.load()
    yield cached, uncached
    store.close()


def _ids(registry: Registry, query: str, limit: int, viewer: Grants) -> list[str]:
    return [h.entry.id for h in registry.search(query, limit, viewer=viewer).hits]


@SETTINGS
@given(viewer=grants, query=st.sampled_from(QUERIES), limit=st.integers(1, 50))
def test_every_hit_is_visible_and_pages_are_full(
    pair: tuple[Registry, Registry], viewer: Grants, query: str, limit: int
) -> None:
    registry, _ = pair
    hits = registry.search(query, limit, viewer=viewer).hits
    assert all(viewer.allows(h.entry.required_scopes) for h in hits)
    visible = sum(c.tool_count for c in registry.catalogs(viewer))
    assert len(hits) == min(limit, visible)


@SETTINGS
@given(
    calls=st.lists(
        st.tuples(grants, st.sampled_from(QUERIES), st.integers(1, 10)), min_size=1, max_size=8
    )
)
def test_cached_results_equal_uncached_results_for_every_caller(
    pair: tuple[Registry, Registry], calls: list[tuple[Grants, str, int]]
) -> None:
    cached, uncached = pair
    # Interleaved callers share queries, so any entry reused across visibility classes shows.
    for viewer, query, limit in calls + calls:
        assert _ids(cached, query, limit, viewer) == _ids(uncached, query, limit, viewer)


@SETTINGS
@given(base=grants, extra=grants)
def test_more_scopes_never_see_fewer_tools(
    pair: tuple[Registry, Registry], base: Grants, extra: Grants
) -> None:
    registry, _ = pair
    wider = Grants(patterns=base.patterns | extra.patterns)
    narrow = {e.id for e in registry.index.entries if base.allows(e.required_scopes)}
    wide = {e.id for e in registry.index.entries if wider.allows(e.required_scopes)}
    assert narrow <= wide
    counts = {c.name: c.tool_count for c in registry.catalogs(wider)}
    for catalog in registry.catalogs(base):
        assert counts[catalog.name] >= catalog.tool_count


def test_a_repeated_search_is_served_from_cache_and_marked(pair: tuple[Registry, Registry]) -> None:
    cached, uncached = pair
    assert not cached.search("book time off").cached
    assert cached.search("  Book   TIME off ").cached
    assert not uncached.search("book time off").cached
    assert not uncached.search("book time off").cached


def test_a_cached_result_is_never_served_to_another_visibility_class(
    pair: tuple[Registry, Registry],
) -> None:
    registry, _ = pair
    admin = registry.search("pay a vendor invoice", 5, viewer=ALL)
    reader = registry.search("pay a vendor invoice", 5, viewer=Grants.parse(["hr:read"]))
    assert not reader.cached
    assert {h.entry.tool.catalog for h in admin.hits} != {"hr"}
    assert all(h.entry.tool.catalog == "hr" for h in reader.hits)


def test_a_catalog_update_is_reflected_by_the_next_search(pair: tuple[Registry, Registry]) -> None:
    registry, _ = pair
    query = "calibrate the flux capacitor"
    before = registry.search(query)
    assert before.hits[0].entry.tool.catalog != "lab"
    outcome = registry.register(
        yaml.safe_dump(
            {
                "capreg": 1,
                "name": "lab",
                "description": "Laboratory equipment.",
                "tools": [
                    {
                        "name": "calibrate_flux_capacitor",
                        "description": "Calibrates the flux capacitor of a lab rig.",
                        "input_schema": {"type": "object", "properties": {}},
                    }
                ],
            }
        )
    )
    after = registry.search(query)
    assert not after.cached
    assert after.generation == outcome.generation
    assert after.hits[0].entry.id == "lab/calibrate_flux_capacitor"


def _not_found_message(registry: Registry, tool_id: str, viewer: Grants) -> str:
    with pytest.raises(ToolsNotFound) as caught:
        registry.schemas([tool_id], viewer)
    return str(caught.value)


def test_invisible_and_unknown_ids_are_indistinguishable(pair: tuple[Registry, Registry]) -> None:
    registry, _ = pair
    reader = Grants.parse(["hr:read"])
    assert registry.schemas(["finance/schedule_vendor_payment"], ALL)
    hidden = _not_found_message(registry, "finance/schedule_vendor_payment", reader)
    unknown = _not_found_message(registry, "finance/no_such_tool_here", reader)
    shape = "unknown tool id: '{}'"
    assert hidden == shape.format("finance/schedule_vendor_payment")
    assert unknown == shape.format("finance/no_such_tool_here")


def test_suggestions_never_name_invisible_tools(pair: tuple[Registry, Registry]) -> None:
    registry, _ = pair
    reader = Grants.parse(["hr:read"])
    with pytest.raises(ToolsNotFound) as caught:
        registry.schemas(["hr/get_employe", "finance/schedule_vendor_paymen"], reader)
    suggestions = [s for found in caught.value.missing.values() for s in found]
    assert "hr/get_employee" in suggestions
    for suggestion in suggestions:
        assert registry.schemas([suggestion], reader)


def test_listings_show_only_visible_catalogs_with_visible_counts(
    pair: tuple[Registry, Registry],
) -> None:
    registry, _ = pair
    listed = {c.name: c.tool_count for c in registry.catalogs(Grants.parse(["hr:read"]))}
    assert set(listed) == {"hr"}
    everything = {c.name: c.tool_count for c in registry.catalogs(ALL)}
    assert 0 < listed["hr"] < everything["hr"]
    assert registry.catalogs(Grants.parse([])) == []
