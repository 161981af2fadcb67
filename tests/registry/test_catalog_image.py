"""A catalog's image (document hashes and tokens) is stored with its revision, so a restart
derives neither again; an image that does not fit is derived afresh and stored back."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import yaml

from indexer.model import Tool
from indexer.retrieval.document import document_hash
from indexer.retrieval.features import SHORTLIST
from indexer.retrieval.lexical import Tokenised
from indexer.retrieval.segment import IndexedTool
from indexer.retrieval.tool_facts import ToolFacts
from indexer.retrieval.tool_index import Hit
from registry import catalog_image, indexing
from registry.catalog_image import CatalogImage, decode
from registry.core import Registry
from registry.store import SqliteStore, tool_texts
from tests.conftest import DATA, CountingEmbedder

MINI = (DATA / "mini.yaml").read_text()
QUERY = "will it rain in Paris tomorrow"


def renamed(name: str) -> str:
    document = yaml.safe_load(MINI)
    document["name"] = name
    return yaml.safe_dump(document)


def image_of(
    documents: list[str],
    scopes: list[frozenset[str]] | None = None,
    facts: list[ToolFacts] | None = None,
) -> CatalogImage:
    own = tuple(scopes) if scopes is not None else (frozenset(),) * len(documents)
    known = tuple(facts) if facts is not None else (ToolFacts("", "", "", False),) * len(documents)
    return CatalogImage(
        tuple(document_hash(d) for d in documents), Tokenised.of(documents), own, known
    )


def test_an_image_reads_back_as_it_was_written() -> None:
    documents = ["Weather: get forecast\nThe forecast for a city", "", "São Paulo café x"]
    scopes = [frozenset({"crm:read", "pii"}), frozenset(), frozenset({"crm:read", "pii"})]
    facts = [
        ToolFacts.of(
            Tool(
                catalog="c",
                name="delete_city",
                description="Removes a city. For good.",
                input_schema={"properties": {"city": {}, "a\x1fb\x00c": {}}},
                output_schema={"properties": {"removed": {}}},
            )
        ),
        ToolFacts("", "", "", False),
        ToolFacts("São Paulo…", "x", "", True),
    ]
    image = image_of(documents, scopes, facts)
    back = decode(image.encode(), len(documents))
    assert back is not None
    assert back.doc_hashes == tuple(document_hash(text) for text in documents)
    assert back.tokens.terms == image.tokens.terms
    assert np.array_equal(back.tokens.ids, image.tokens.ids)
    assert np.array_equal(back.tokens.tf, image.tokens.tf)
    assert back.tokens.distinct.tolist() == [4, 0, 3]  # "forecast" twice in the first
    assert back.tokens.lengths.tolist() == [5, 0, 3]
    assert back.scopes == tuple(scopes)
    assert tuple(back.facts) == tuple(facts)
    assert back.facts[0].summary == "Removes a city."
    assert back.facts[0].input_names == {"city", "a b c"}
    assert back.facts[0].output_names == {"removed"}
    assert back.facts[0].destructive


def test_an_image_of_more_terms_than_two_bytes_count_keeps_every_id() -> None:
    documents = [
        " ".join(f"w{i}" for i in range(start, start + 1000)) for start in range(0, 70_000, 1000)
    ]
    image = image_of(documents)
    back = decode(image.encode(), len(documents))
    assert back is not None
    assert len(back.tokens.terms) == 70_000
    assert np.array_equal(back.tokens.ids, image.tokens.ids)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda blob: blob[:4] + bytes(16) + blob[20:], id="another-derivation"),
        pytest.param(lambda blob: blob[:-3], id="cut-short"),
        pytest.param(lambda blob: b"XXXX" + blob[4:], id="not-an-image"),
        pytest.param(lambda _blob: b"", id="none-stored"),
    ],
)
def test_an_image_that_does_not_fit_is_not_used(damage: Callable[[bytes], bytes]) -> None:
    blob = image_of(["alpha beta", "gamma"]).encode()
    assert decode(damage(blob), 2) is None


def test_an_image_whose_facts_do_not_split_three_a_tool_is_not_used() -> None:
    blob = image_of(["alpha beta", "gamma"], facts=[ToolFacts("a\x00b", "", "", False)] * 2)
    assert decode(blob.encode(), 2) is None


def test_stored_facts_are_made_a_tool_at_a_time_when_first_read() -> None:
    facts = [
        ToolFacts("Gets the weather — in °C.", "city", "", False),
        ToolFacts("", "", "", False),
        ToolFacts("Drops it.", "city,ünits", "gone", True),
    ]
    names = ["get weather", "nothing", "drop city"]
    back = decode(image_of(names, facts=facts).encode(), 3)
    assert back is not None
    stored = back.facts
    assert isinstance(stored, catalog_image.StoredFacts)
    assert len(stored) == 3
    assert stored[2] == facts[2]
    assert stored[2] is stored[2]
    assert stored._made.keys() == {2}  # the tool read, not its catalog's
    assert stored[-3] == facts[0]
    assert stored[1] == facts[1]
    assert list(stored) == facts
    assert stored[0:2] == tuple(facts[:2])
    with pytest.raises(IndexError):
        stored[3]
    with pytest.raises(IndexError):
        stored[-4]


def test_an_image_for_another_tool_count_is_not_used() -> None:
    blob = image_of(["alpha beta", "gamma"]).encode()
    assert decode(blob, 3) is None


def test_term_ids_past_the_terms_are_refused() -> None:
    one = np.array([1], dtype=np.int32)
    with pytest.raises(ValueError, match="do not fit"):
        Tokenised(("a",), np.array([0, 1], dtype=np.int32), np.array([1, 1]), np.array([2]), one)


def restart(path: Path, embedder: CountingEmbedder) -> tuple[Registry, SqliteStore]:
    store = SqliteStore(path)
    registry = Registry(store, embedder)
    registry.load()
    return registry, store


def stored_images(path: Path) -> dict[str, bytes | None]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT name, image FROM catalogs").fetchall())


def test_a_restart_reads_the_images_and_derives_no_document(
    tmp_path: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    registry, store = restart(path, embedder)
    registry.register(MINI)
    registry.register(renamed("other"))
    before = [(h.entry.id, round(h.score, 5)) for h in registry.search(QUERY).hits]
    store.close()

    def no_derivation(*_args: object) -> str:
        raise AssertionError("a document text was derived again")

    monkeypatch.setattr(indexing, "document_text", no_derivation)
    restarted, store = restart(path, embedder)
    assert [(h.entry.id, round(h.score, 5)) for h in restarted.search(QUERY).hits] == before
    store.close()


def test_a_store_without_images_is_derived_and_given_them(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    path = tmp_path / "store.db"
    registry, store = restart(path, embedder)
    registry.register(MINI)
    before = [(h.entry.id, round(h.score, 5)) for h in registry.search(QUERY).hits]
    written = stored_images(path)
    store.close()
    with sqlite3.connect(path) as db:  # as a store written before images existed
        db.execute("UPDATE catalogs SET image = NULL")
    restarted, store = restart(path, embedder)
    assert [(h.entry.id, round(h.score, 5)) for h in restarted.search(QUERY).hits] == before
    assert stored_images(path) == written
    store.close()


def test_an_image_derived_another_way_is_replaced(
    tmp_path: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    with monkeypatch.context() as patched:
        patched.setattr(catalog_image, "FINGERPRINT", bytes(16))
        registry, store = restart(path, embedder)
        registry.register(MINI)
        store.close()
    [old] = stored_images(path).values()
    assert old is not None
    assert decode(old, len(yaml.safe_load(MINI)["tools"])) is None
    registry, store = restart(path, embedder)
    [new] = stored_images(path).values()
    assert decode(new, len(yaml.safe_load(MINI)["tools"])) is not None
    assert registry.search(QUERY).hits
    store.close()


def test_a_search_makes_the_entries_of_the_tools_it_reads_not_of_their_catalogs(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    path = tmp_path / "store.db"
    registry, store = restart(path, embedder)
    document = yaml.safe_load(MINI)
    document["tools"] = [
        {**tool, "name": f"{tool['name']}_{copy}"}
        for copy in range(40)
        for tool in document["tools"]
    ]
    registry.register(yaml.safe_dump(document))
    store.close()
    restarted, store = restart(path, embedder)

    def entries() -> int:
        return sum(isinstance(o, IndexedTool) for o in gc.get_objects())

    held = entries()
    hits = restarted.search(QUERY, limit=3).hits
    assert {h.entry.tool.catalog for h in hits} == {"mini"}
    # One catalog: the shortlist's entries are made, not the catalog's.
    assert 0 < entries() - held <= SHORTLIST < len(restarted.index)
    store.close()


def test_searches_reading_the_same_tools_at_once_serve_them_as_one_search_does(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    path = tmp_path / "store.db"
    registry, store = restart(path, embedder)
    for name in ("one", "two", "three"):
        registry.register(renamed(name))
    store.close()
    queries = [QUERY, "convert dollars to euros", "a city's weather next week"] * 4

    def served(hits: Sequence[Hit]) -> list[tuple[str, str, frozenset[str], int]]:
        return [
            (h.entry.id, h.entry.summary, h.entry.input_names, h.entry.catalog_revision)
            for h in hits
        ]

    alone, store = restart(path, embedder)
    expected = [served(alone.search(q, limit=5).hits) for q in queries]
    store.close()
    together, store = restart(path, embedder)  # nothing made yet: every read is a first one
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = list(pool.map(lambda q: served(together.search(q, limit=5).hits), queries))
    assert found == expected
    store.close()


def test_a_restart_reads_no_schema_until_one_is_asked_for(
    tmp_path: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    registry, store = restart(path, embedder)
    # More tools than the learned stage's shortlist (50), which reads each one's parameters.
    names = [f"copy{i}" for i in range(20)]
    with registry.bulk():
        for name in names:
            registry.register(renamed(name))
    before = registry.search(QUERY, limit=3)
    held = registry.schemas([before.hits[0].entry.id])[0].tool
    schema = (held.description, held.input_schema, held.annotations)
    store.close()
    parsed: list[str] = []
    real = tool_texts.tool_from_json

    def counted(catalog: str, name: str, text: str) -> Tool:
        parsed.append(f"{catalog}/{name}")
        return real(catalog, name, text)

    monkeypatch.setattr(tool_texts, "tool_from_json", counted)
    tool_texts.PARSED.clear()
    made: list[str] = []

    def counted_facts(summary: str, inputs: str, outputs: str, destructive: bool) -> ToolFacts:
        made.append(summary)
        return ToolFacts(summary, inputs, outputs, destructive)

    monkeypatch.setattr(catalog_image, "ToolFacts", counted_facts)
    restarted, store = restart(path, embedder)
    assert parsed == []
    assert made == []  # no tool's facts are made before a search reads them
    after = restarted.search(QUERY, limit=3)
    # Each tool's facts are made when a search first reads them: the learned stage's
    # shortlist's at most, not their catalogs' every tool.
    tools = len(restarted.index)
    assert 0 < len(made) <= SHORTLIST < tools
    once = len(made)
    restarted.search(QUERY, limit=4)  # the same tools read again (limit 4: not the cache)
    assert len(made) == once
    assert [(h.entry.id, h.entry.summary) for h in after.hits] == [
        (h.entry.id, h.entry.summary) for h in before.hits
    ]
    assert parsed == []
    shown = after.hits[0].entry.id
    read = restarted.schemas([shown])[0].tool
    assert (read.description, read.input_schema, read.annotations) == schema
    # The schema asked for, and its catalog's others (its links are derived from them all).
    assert shown in parsed
    assert {tool_id.partition("/")[0] for tool_id in parsed} == {shown.partition("/")[0]}
    store.close()
