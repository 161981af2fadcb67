"""The registry core over a real SQLite file and the real model."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from indexer.formats import CatalogError, parse_catalog
from indexer.model import Catalog
from indexer.naming import FUNCTION_NAME
from registry import writer
from registry.auth.scopes import Grants
from registry.config import CatalogPolicy
from registry.core import Registry
from registry.errors import CatalogNotFound, InvalidRequest, NotReady, ToolsNotFound
from registry.store import SqliteStore
from tests.conftest import DATA, CountingEmbedder

MINI = (DATA / "mini.yaml").read_text()


def _edited(change: dict[str, object], index: int = 0, drop: int | None = None) -> str:
    document = yaml.safe_load(MINI)
    document["tools"][index].update(change)
    if drop is not None:
        del document["tools"][drop]
    return yaml.safe_dump(document)


def test_registering_a_catalog_embeds_its_tools_and_makes_them_searchable(
    empty_registry: Registry, embedder: CountingEmbedder
) -> None:
    outcome = empty_registry.register(MINI)
    assert (outcome.added, outcome.updated, outcome.removed, outcome.unchanged) == (3, 0, 0, 0)
    assert outcome.revision == 1
    assert outcome.embedded == 3
    assert embedder.texts == 3
    result = empty_registry.search("will it be sunny this weekend")
    assert result.hits[0].entry.id == "mini/get_weather_forecast"
    assert result.generation == outcome.generation


def test_reregistering_an_unchanged_catalog_embeds_nothing(
    empty_registry: Registry, embedder: CountingEmbedder
) -> None:
    first = empty_registry.register(MINI)
    embedder.texts = 0
    again = empty_registry.register(MINI)
    assert embedder.texts == 0
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 3)
    assert again.revision == first.revision
    assert again.generation == first.generation


def test_an_identical_resubmission_is_answered_without_parsing(
    empty_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = empty_registry.register(MINI)
    changed = _edited({"description": "Seven-day forecast by city."})
    parsed: list[str] = []
    real_parse = parse_catalog

    def counting_parse(content: str, **kwargs: str) -> Catalog:
        parsed.append(content)
        return real_parse(content, **kwargs)

    monkeypatch.setattr(writer, "parse_catalog", counting_parse)
    again = empty_registry.register(MINI)
    assert parsed == []
    assert (again.unchanged, again.revision, again.generation) == (3, 1, first.generation)
    # A change, then the original bytes again: both are real replacements.
    assert empty_registry.register(changed).revision == 2
    assert empty_registry.register(MINI).revision == 3
    assert len(parsed) == 2
    # The same bytes under another stated format, or after a delete, are parsed again.
    assert empty_registry.register(MINI, fmt="native").unchanged == 3
    empty_registry.delete("mini")
    assert empty_registry.register(MINI).added == 3
    assert len(parsed) == 4


def test_a_request_and_its_clauses_cost_one_model_pass(
    sample_registry: Registry, embedder: CountingEmbedder
) -> None:
    query = (
        "Reset the two-factor authentication of a user, "
        "then open a support ticket for the customer."
    )
    embedder.calls = 0
    joint = sample_registry.search(query, 5).hits
    assert embedder.calls == 1
    apart = sample_registry.search(query, 5, retriever="hybrid-clauses-apart").hits
    assert embedder.calls == 2  # the request and both clauses, in one batch
    assert {"identity/reset_mfa_factors", "support/create_ticket"} <= {h.entry.id for h in joint}
    assert {"identity/reset_mfa_factors", "support/create_ticket"} <= {h.entry.id for h in apart}


def test_changing_one_tool_embeds_only_that_tool(
    empty_registry: Registry, embedder: CountingEmbedder
) -> None:
    empty_registry.register(MINI)
    embedder.texts = 0
    outcome = empty_registry.register(_edited({"description": "Seven-day forecast by city."}))
    assert embedder.texts == 1
    assert (outcome.updated, outcome.unchanged, outcome.revision) == (1, 2, 2)
    unchanged = empty_registry.schemas(["mini/convert_currency"])[0]
    assert unchanged.catalog_revision == 1


def test_reregistering_replaces_the_catalog_as_a_whole(empty_registry: Registry) -> None:
    empty_registry.register(MINI)
    outcome = empty_registry.register(_edited({}, drop=2))
    assert outcome.removed == 1
    with pytest.raises(ToolsNotFound):
        empty_registry.schemas(["mini/delete_account"])


def test_restart_restores_everything_without_embedding(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> None:
    from tests.conftest import copy_db

    path = copy_db(sample_db, tmp_path)
    first = Registry(SqliteStore(path), embedder)
    first.load()
    before = first.search("open a support ticket for a customer")
    embedder.calls = embedder.texts = 0
    restarted = Registry(SqliteStore(path), embedder)
    restarted.load()
    assert embedder.texts == 0
    assert len(restarted.index) == len(first.index)
    after = restarted.search("open a support ticket for a customer")
    assert [h.entry.id for h in after.hits] == [h.entry.id for h in before.hits]
    assert after.generation == before.generation


def test_a_restart_makes_the_served_form_of_only_the_catalogs_a_search_reads(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> None:
    from tests.conftest import copy_db

    registry = Registry(SqliteStore(copy_db(sample_db, tmp_path)), embedder)
    registry.load()
    segments = registry.index.segments
    assert len(segments) > 2
    assert not [s.name for s in segments if "entries" in vars(s)]
    hits = registry.search("open a support ticket for a customer").hits
    made = {s.name for s in segments if "entries" in vars(s)}
    assert {h.entry.tool.catalog for h in hits} <= made < {s.name for s in segments}
    with pytest.raises(ToolsNotFound):
        registry.snapshot.schemas(["support/open_tickett"])
    assert {s.name for s in segments if "entries" in vars(s)} == made
    assert [e.id for e in registry.index.entries] == sorted(e.id for e in registry.index.entries)


def test_bad_catalog_leaves_the_previous_version_answering(empty_registry: Registry) -> None:
    good = empty_registry.register(MINI)
    with pytest.raises(CatalogError):
        empty_registry.register(_edited({"input_schema": {"type": "string"}}))
    assert empty_registry.index.generation == good.generation
    assert len(empty_registry.schemas(["mini/delete_account"])) == 1
    assert empty_registry.catalogs()[0].revision == 1


def test_failure_inside_the_transaction_keeps_the_old_version(
    empty_registry: Registry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: CountingEmbedder,
) -> None:
    empty_registry.register(MINI)
    store = empty_registry.writer._store  # the store the registry writes through

    def fail(*_args: object) -> int:
        raise RuntimeError("disk vanished mid-write")

    monkeypatch.setattr(store, "_bump_generation", fail)
    with pytest.raises(RuntimeError):
        empty_registry.register(_edited({}, drop=0))
    monkeypatch.undo()
    reopened = Registry(SqliteStore(Path(store.location)), embedder)
    reopened.load()
    assert {e.id for e in reopened.index.entries} == {
        "mini/get_weather_forecast",
        "mini/convert_currency",
        "mini/delete_account",
    }
    assert reopened.catalogs()[0].revision == 1


def test_delete_removes_the_catalog(empty_registry: Registry) -> None:
    empty_registry.register(MINI)
    removed, generation = empty_registry.delete("mini")
    assert removed == 3
    assert len(empty_registry.index) == 0
    assert empty_registry.index.generation == generation
    with pytest.raises(CatalogNotFound):
        empty_registry.delete("mini")


def test_unknown_ids_are_named_with_close_suggestions(sample_registry: Registry) -> None:
    with pytest.raises(ToolsNotFound) as caught:
        sample_registry.schemas(["hr/get_employe", "support/create_ticket", "nope/x"])
    assert set(caught.value.missing) == {"hr/get_employe", "nope/x"}
    assert "hr/get_employee" in caught.value.missing["hr/get_employe"]
    assert len(caught.value.missing["hr/get_employe"]) <= 3


def test_schemas_come_back_in_request_order_without_duplicates(sample_registry: Registry) -> None:
    ids = ["support/create_ticket", "hr/get_employee", "support/create_ticket"]
    assert [e.id for e in sample_registry.schemas(ids)] == ids[:2]


def test_function_names_are_unique_and_safe_across_the_samples(sample_registry: Registry) -> None:
    names = [e.function_name for e in sample_registry.index.entries]
    assert len(set(names)) == len(names)
    assert all(FUNCTION_NAME.fullmatch(n) for n in names)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("open a support ticket for a customer", "support/create_ticket"),
        ("book time off next week", "hr/submit_leave_request"),
        ("roll back the release that broke production", "devops/rollback_deployment"),
        ("pay a supplier's bill", "finance/schedule_vendor_payment"),
        ("reset a user's two-factor authentication", "identity/reset_mfa_factors"),
        ("find a slot when everyone is free to meet", "workspace/find_meeting_times"),
    ],
)
def test_paraphrased_needs_find_the_obvious_tool(
    sample_registry: Registry, query: str, expected: str
) -> None:
    ids = [h.entry.id for h in sample_registry.search(query, limit=3).hits]
    assert expected in ids


def test_hits_are_ordered_by_score_then_id(sample_registry: Registry) -> None:
    hits = sample_registry.search("list things", limit=50).hits
    keys = [(-h.score, h.entry.id) for h in hits]
    assert keys == sorted(keys)
    assert len(hits) == 50


def test_catalog_filter_restricts_hits(sample_registry: Registry) -> None:
    hits = sample_registry.search("create a record", limit=10, catalogs=["crm"]).hits
    assert hits
    assert {h.entry.tool.catalog for h in hits} == {"crm"}
    with pytest.raises(CatalogNotFound):
        sample_registry.search("x", catalogs=["no-such-catalog"])


@pytest.mark.parametrize(
    ("query", "limit"), [("   ", 5), ("x" * 32_001, 5), ("ok", 51), ("ok", -1)]
)
def test_malformed_searches_are_rejected(sample_registry: Registry, query: str, limit: int) -> None:
    with pytest.raises(InvalidRequest):
        sample_registry.search(query, limit)


def test_an_unrelated_need_is_flagged_as_a_weak_match(sample_registry: Registry) -> None:
    assert sample_registry.search("bake a chocolate cake").weak_match
    assert not sample_registry.search("open a support ticket for a customer").weak_match


def test_queries_before_loading_are_refused(tmp_path: Path, embedder: CountingEmbedder) -> None:
    registry = Registry(SqliteStore(tmp_path / "r.db"), embedder)
    with pytest.raises(NotReady):
        registry.search("anything")


def test_a_function_name_collision_is_refused_naming_both_tools(empty_registry: Registry) -> None:
    from indexer.naming import function_name

    hashed = function_name("clash", "a b")  # unsafe name: shortened and suffixed with a hash
    literal = hashed.removeprefix("clash__")  # a safe tool name that maps to the same name
    schema = {"type": "object", "properties": {}}
    content = yaml.safe_dump(
        {
            "capreg": 1,
            "name": "clash",
            "description": "Two tools, one function name.",
            "tools": [
                {"name": "a b", "description": "First.", "input_schema": schema},
                {"name": literal, "description": "Second.", "input_schema": schema},
            ],
        }
    )
    with pytest.raises(CatalogError) as caught:
        empty_registry.register(content)
    assert hashed in str(caught.value)
    assert "clash/a b" in str(caught.value)
    assert empty_registry.catalogs() == []


def test_registration_returns_the_lint_warnings(empty_registry: Registry) -> None:
    content = (DATA / "poisoning" / "annotations.yaml").read_text(encoding="utf-8")
    outcome = empty_registry.register(content)
    assert any("tag addressed to the model" in w for w in outcome.warnings)


def test_a_poisoned_catalog_is_refused_when_the_policy_says_so(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    store = SqliteStore(tmp_path / "strict.db")
    strict = Registry(store, embedder, policy=CatalogPolicy(refuse_poisoning=True))
    strict.load()
    with pytest.raises(CatalogError, match="tool-poisoning"):
        strict.register((DATA / "poisoning" / "base64.yaml").read_text(encoding="utf-8"))
    assert strict.register((DATA / "poisoning" / "clean.yaml").read_text()).added == 1
    store.close()


def test_a_catalog_without_scopes_is_not_public(empty_registry: Registry) -> None:
    content = (DATA / "openai_tools.json").read_text()
    outcome = empty_registry.register(content, name="weather")
    assert outcome.assigned_scope == "weather:read"
    reader = Grants.parse(["hr:read"])
    assert not [c for c in empty_registry.catalogs(reader) if c.name == "weather"]
    allowed = empty_registry.catalogs(Grants.parse(["weather:read"]))
    assert [c.name for c in allowed] == ["weather"]


def test_an_empty_default_scope_leaves_unscoped_catalogs_public(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    store = SqliteStore(tmp_path / "open.db")
    open_registry = Registry(store, embedder, policy=CatalogPolicy(default_scope=""))
    open_registry.load()
    outcome = open_registry.register((DATA / "openai_tools.json").read_text(), name="weather")
    assert outcome.assigned_scope == ""
    assert [c.name for c in open_registry.catalogs(Grants.parse(["hr:read"]))] == ["weather"]
    store.close()


def test_a_long_name_is_shortened_inside_its_default_scope(empty_registry: Registry) -> None:
    name = "w" * 62
    outcome = empty_registry.register((DATA / "openai_tools.json").read_text(), name=name)
    assert outcome.assigned_scope == "w" * 59 + ":read"
    granted = Grants.parse([outcome.assigned_scope])
    assert [c.name for c in empty_registry.catalogs(granted)] == [name]


@pytest.mark.parametrize("limit", [0, 5, 50])
def test_a_tool_named_with_its_catalog_is_first_and_listed_once(
    sample_registry: Registry, limit: int
) -> None:
    # "support/create_ticket" names the tool and its catalog: the catalog's best tool is the
    # same tool, and the answer must not hold it twice.
    ids = [h.entry.id for h in sample_registry.search("use support/create_ticket", limit).hits]
    assert ids[0] == "support/create_ticket"
    assert len(ids) == len(set(ids))
