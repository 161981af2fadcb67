"""Untrusted JSON and YAML: bounds are checked while parsing, and every refusal is typed."""

from __future__ import annotations

import json
import time

import pytest

from indexer.documents import MAX_DEPTH, MAX_EXPANDED_CHARS, DocumentError, load_document
from indexer.formats import CatalogError, parse_catalog
from tests.conftest import DATA

# Nine levels of nine aliases: 9**9 (~387 million) values once expanded, in under 1 KB.
ALIAS_BOMB = (DATA / "alias_bomb.yaml").read_text()


def test_an_alias_bomb_is_refused_before_it_expands() -> None:
    started = time.perf_counter()
    with pytest.raises(DocumentError, match="expands"):
        load_document(ALIAS_BOMB)
    # Bounded work, not a stall: far below what expanding it would take.
    assert time.perf_counter() - started < 5


def test_an_alias_bomb_catalog_is_a_catalog_error() -> None:
    content = "capreg: 1\nname: bomb\ndescription: x\ntools: []\n" + ALIAS_BOMB
    with pytest.raises(CatalogError, match="expands"):
        parse_catalog(content)


def test_a_few_shared_fragments_still_load() -> None:
    text = "base: &base {type: object}\nfirst: *base\nsecond: *base\n"
    assert load_document(text) == {
        "base": {"type": "object"},
        "first": {"type": "object"},
        "second": {"type": "object"},
    }


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5_000 + "]" * 5_000,
        '{"a":' * 5_000 + "1" + "}" * 5_000,
        "a:\n" + "".join("  " * i + "- \n" for i in range(1, 300)),
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "x: " + "[" * 5_000 + "]" * 5_000,
    ],
)
def test_deep_nesting_is_refused_without_exhausting_recursion(text: str) -> None:
    with pytest.raises(DocumentError, match="nested"):
        load_document(text)


def test_a_lone_surrogate_escape_is_refused_naming_it() -> None:
    document = json.loads((DATA / "openai_tools.json").read_text())
    text = json.dumps(document).replace("Get", "Get\\ud800", 1)
    with pytest.raises(DocumentError, match="ud800"):
        load_document(text)
    with pytest.raises(CatalogError, match="surrogate"):
        parse_catalog(text, name="x")


def test_a_schema_nested_hundreds_deep_is_a_catalog_error() -> None:
    schema: dict[str, object] = {"type": "object"}
    for _ in range(400):
        schema = {"type": "object", "properties": {"x": schema}}
    content = json.dumps(
        {
            "capreg": 1,
            "name": "deep",
            "description": "d",
            "tools": [{"name": "t", "description": "d", "input_schema": schema}],
        }
    )
    with pytest.raises(CatalogError, match="nested"):
        parse_catalog(content)


def one_string_many_aliases(chars: int = 1_000_000, aliases: int = 1_000) -> str:
    """One long string, and a tool whose schema repeats it through aliases: a small file
    whose text, once expanded, is `chars * aliases` characters."""
    properties = "".join(f"      p{i}: {{type: string, description: *s}}\n" for i in range(aliases))
    return (
        f"capreg: 1\nname: aliased\ndescription: x\nfiller: &s {'x' * chars}\n"
        "tools:\n  - name: t\n    description: Repeats a string.\n"
        f"    input_schema:\n      type: object\n      properties:\n{properties}"
    )


def test_text_repeated_through_aliases_is_refused_naming_the_limit() -> None:
    with pytest.raises(DocumentError, match=f"{MAX_EXPANDED_CHARS:,} characters"):
        load_document(one_string_many_aliases())
    # The same text written out once, without aliases, is within the limit.
    assert load_document(one_string_many_aliases(aliases=1))["name"] == "aliased"
