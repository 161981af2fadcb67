"""Schemas are read from the store when asked for, at the revision the snapshot holds: a
snapshot older than the store reads what it held, or says the tool changed; never another
version's schema as its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml

from registry.core import Registry
from registry.rpc.status import status_for
from registry.store import SqliteStore, ToolChanged
from registry.store.tool_texts import PARSED, StoredToolText
from tests.conftest import DATA, CountingEmbedder

MINI = yaml.safe_load((DATA / "mini.yaml").read_text())


def catalog_text(**descriptions: str) -> str:
    document = yaml.safe_load((DATA / "mini.yaml").read_text())
    for tool in document["tools"]:
        tool["description"] = descriptions.get(tool["name"], tool["description"])
    return yaml.safe_dump(document)


@pytest.fixture
def restarted(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Registry]:
    """A registry restarted over a store holding the mini catalog: its tools are held by
    name and revision, their schemas in the store."""
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    first = Registry(store, embedder)
    first.load()
    first.register(catalog_text())
    store.close()
    PARSED.clear()
    store = SqliteStore(path)
    registry = Registry(store, embedder)
    registry.load()
    yield registry
    store.close()


def test_a_restarted_registry_holds_no_schema_and_reads_one_when_asked(
    restarted: Registry,
) -> None:
    [entry] = restarted.schemas(["mini/convert_currency"])
    assert isinstance(entry.tool, StoredToolText)
    assert entry.tool.output_schema == MINI["tools"][1]["output_schema"]
    assert entry.tool.annotations == {"readOnlyHint": True}
    assert (
        entry.summary == "Converts an amount of money from one currency to another at today's rate."
    )
    assert entry.destructive is False
    assert restarted.schemas(["mini/delete_account"])[0].destructive is True


def test_an_older_snapshot_still_reads_the_tools_it_holds_after_a_change_here(
    restarted: Registry,
) -> None:
    older = restarted.snapshot
    restarted.register(catalog_text(get_weather_forecast="Forecasts, now hourly."))
    PARSED.clear()
    for snapshot_tool, description in (
        ("mini/convert_currency", MINI["tools"][1]["description"]),
        ("mini/get_weather_forecast", MINI["tools"][0]["description"]),
    ):
        [held] = older.schemas([snapshot_tool])
        assert held.tool.description == description
    [current] = restarted.schemas(["mini/get_weather_forecast"])
    assert current.tool.description == "Forecasts, now hourly."


def test_a_catalog_deleted_and_stored_anew_is_not_read_as_the_deleted_one(
    restarted: Registry,
) -> None:
    older = restarted.snapshot
    restarted.delete("mini")
    # Stored anew, it starts again at revision 1: the deleted tools' revisions.
    outcome = restarted.register(catalog_text(convert_currency="Converts, with fees."))
    assert outcome.revision == 1
    PARSED.clear()
    [held] = older.schemas(["mini/convert_currency"])
    assert held.tool.description == MINI["tools"][1]["description"]
    [current] = restarted.schemas(["mini/convert_currency"])
    assert current.tool.description == "Converts, with fees."


@pytest.fixture
def other_writer(
    tmp_path: Path, restarted: Registry, embedder: CountingEmbedder
) -> Iterator[Registry]:
    """Another registry writing the same store file as `restarted`, which it does not follow."""
    store = SqliteStore(tmp_path / "store.db")
    other = Registry(store, embedder)
    other.load()
    yield other
    store.close()


def test_a_tool_another_writer_changed_is_refused_until_this_one_catches_up(
    restarted: Registry, other_writer: Registry
) -> None:
    older = restarted.snapshot
    other_writer.register(catalog_text(get_weather_forecast="Forecasts, now hourly."))
    PARSED.clear()
    # A schema is shown with its links, derived from every tool of its catalog: the
    # unchanged tool's schema waits for the catch-up as well.
    for tool_id in ("mini/get_weather_forecast", "mini/convert_currency"):
        with pytest.raises(ToolChanged, match="mini/get_weather_forecast"):
            older.schemas([tool_id])


def test_a_changed_tool_is_an_aborted_call_that_says_to_ask_again() -> None:
    code, message = status_for(ToolChanged("mini/convert_currency"))
    assert code == grpc.StatusCode.ABORTED
    assert "ask again" in message


def test_a_catalog_another_writer_deleted_and_stored_anew_is_not_read_as_the_held_one(
    restarted: Registry, other_writer: Registry
) -> None:
    older = restarted.snapshot
    other_writer.delete("mini")
    # Stored anew, its revisions start again at 1: the ones this registry's tools are held at.
    new = catalog_text(convert_currency="Converts, with fees.")
    assert other_writer.register(new).revision == 1
    PARSED.clear()
    # Its links are derived from every tool of the catalog, each read at its own revision.
    with pytest.raises(ToolChanged, match="tool 'mini/"):
        older.schemas(["mini/convert_currency"])
