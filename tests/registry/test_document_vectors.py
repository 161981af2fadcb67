"""Each live document's vector is held once, in the snapshot's arena: copies of a catalog and
catalogs registered again after a renumbering find their vectors without the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from numpy.typing import NDArray

from indexer.model import Tool
from indexer.retrieval import segment
from indexer.retrieval.lexical import Tokenised
from indexer.retrieval.segment import IndexedTool, SegmentSource, SegmentSpace
from registry.core import Registry
from registry.store import SqliteStore
from tests.conftest import DATA, CountingEmbedder

MINI = (DATA / "mini.yaml").read_text()
QUERIES = ("will it rain in Lisbon", "convert 20 euros to yen")


def renamed(name: str, note: str = "") -> str:
    """The mini catalog under another name (same title: its tools embed alike), its first
    tool's description extended by `note`."""
    document = yaml.safe_load(MINI)
    document["name"] = name
    document["tools"][0]["description"] += note
    return yaml.safe_dump(document)


def answers(registry: Registry) -> list[list[tuple[str, float]]]:
    return [
        [(hit.entry.id, round(hit.score, 5)) for hit in registry.search(query, 10).hits]
        for query in QUERIES
    ]


def entry(catalog: str, name: str) -> IndexedTool:
    tool = Tool(catalog=catalog, name=name, description="Does a thing.", input_schema={})
    return IndexedTool(
        tool=tool,
        required_scopes=frozenset(),
        catalog_title=catalog,
        catalog_version="1",
        catalog_revision=1,
    )


def held(space: SegmentSpace, key: str) -> NDArray[np.float32]:
    vector = space.vector(key)
    assert vector is not None, key
    return vector


def test_a_space_answers_for_the_documents_its_live_segments_hold() -> None:
    space = SegmentSpace(3)
    matrix = np.eye(3, dtype=np.float32)
    kept, _ = space.segments(
        [
            SegmentSource(
                "a",
                [entry("a", "x"), entry("a", "y")],
                matrix[:2],
                ["hx", "hy"],
                Tokenised.of(["x", "y"]),
            ),
            SegmentSource("b", [entry("b", "z")], matrix[2:], ["hz"], Tokenised.of(["z"])),
        ]
    )
    assert np.array_equal(held(space, "hy"), matrix[1])
    assert np.array_equal(held(space, "hz"), matrix[2])
    assert space.vector("missing") is None
    (moved,) = space.renumbered([kept])
    assert np.array_equal(held(space, "hx"), matrix[0])
    assert space.vector("hz") is None
    assert not space.holds("hz")
    assert sorted(space.held_keys()) == ["hx", "hy"]
    assert np.array_equal(space.vectors[moved.slots], matrix[:2])


def test_a_copy_of_a_live_catalog_is_not_embedded_again(
    empty_registry: Registry, embedder: CountingEmbedder
) -> None:
    empty_registry.register(renamed("first"), name="first")
    before = embedder.texts
    outcome = empty_registry.register(renamed("second"), name="second")
    assert outcome.embedded == 0
    assert embedder.texts == before


def test_vectors_outlive_renumbering_and_deleted_catalogs_come_back_from_the_store(
    tmp_path: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reason for the patch: renumbering starts past twice 1,024 vector slots; a ratio of 0
    # renumbers on every build, so a handful of small catalogs exercise it.
    monkeypatch.setattr(segment, "MAX_SLOT_RATIO", 0)
    db = tmp_path / "renumbered.db"
    store = SqliteStore(db)
    registry = Registry(store, embedder)
    registry.load()
    registry.register(renamed("first"), name="first")
    registry.register(renamed("second", " Also snow."), name="second")
    registry.register(renamed("first", " Also hail."), name="first")
    registry.delete("second")
    before = embedder.texts
    # "second" left every segment (renumbering forgot it): its vectors come from the store.
    assert registry.register(renamed("second", " Also snow."), name="second").embedded == 0
    assert embedder.texts == before
    served = answers(registry)
    store.close()

    fresh_store = SqliteStore(db)
    fresh = Registry(fresh_store, embedder)
    fresh.load()
    assert answers(fresh) == served
    assert {hit.split("/")[0] for hits in served for hit, _ in hits} == {"first", "second"}
    fresh_store.close()
