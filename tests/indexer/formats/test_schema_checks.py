"""Schema checks at registration: each distinct schema is checked against the meta-schemas
once, whatever the draft order, with the same verdict and message as a check of its own."""

from __future__ import annotations

import json
import uuid

import pytest

from indexer.formats import CatalogError, parse_catalog
from indexer.formats.validate import CHECKED_SCHEMAS
from registry.core import Registry


def catalog_with_fresh_schemas(name: str, marker: str, tools: int = 4) -> str:
    """A native catalog whose tool schemas no other test has checked (`marker` in them)."""
    entries = [
        {
            "name": f"tool_{i}",
            "description": f"Looks up record {i} by its id and returns its fields.",
            "input_schema": {
                "type": "object",
                "properties": {f"id_{marker}_{i}": {"type": "string", "description": "The id."}},
            },
        }
        for i in range(tools)
    ]
    return json.dumps(
        {"capreg": 1, "name": name, "title": "Records", "description": "Records.", "tools": entries}
    )


def test_copies_of_a_catalog_check_each_distinct_schema_once() -> None:
    marker = uuid.uuid4().hex
    before = CHECKED_SCHEMAS.checks
    for copy in range(30):
        parse_catalog(catalog_with_fresh_schemas(f"records-{copy}", marker), fmt="native")
    assert CHECKED_SCHEMAS.checks - before == 4


def test_registering_copies_checks_each_schema_once_however_many_catalogs_are_live(
    empty_registry: Registry,
) -> None:
    marker = uuid.uuid4().hex
    before = CHECKED_SCHEMAS.checks
    with empty_registry.bulk():
        for copy in range(20):
            empty_registry.register(catalog_with_fresh_schemas(f"records-{copy}", marker))
    assert CHECKED_SCHEMAS.checks - before == 4
    assert len(empty_registry.catalogs()) == 20


def test_a_schema_no_draft_accepts_is_refused_with_the_newest_drafts_message_every_time() -> None:
    bad = {
        "capreg": 1,
        "name": "bad",
        "tools": [
            {
                "name": "t",
                "description": "Does one thing well.",
                "input_schema": {
                    "type": "object",
                    "properties": {f"q{uuid.uuid4().hex}": {"type": "text"}},
                },
            }
        ],
    }
    messages = []
    for _ in range(2):  # the second answer comes from memory
        with pytest.raises(CatalogError) as refused:
            parse_catalog(json.dumps(bad), fmt="native")
        messages.append(str(refused.value))
    assert messages[0] == messages[1]
    assert "is not a valid JSON Schema at properties/" in messages[0]
    assert "is not valid under any of the given schemas" in messages[0]


def test_a_draft_4_form_is_still_accepted() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    document = {
        "capreg": 1,
        "name": "old",
        "description": "Old forms.",
        "tools": [{"name": "t", "description": "Counts things.", "input_schema": schema}],
    }
    assert parse_catalog(json.dumps(document), fmt="native").tools[0].input_schema == schema
