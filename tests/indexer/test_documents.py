"""Untrusted JSON and YAML: bounds are checked while parsing, and every refusal is typed."""

from __future__ import annotations

import json
import time

import pytest

from indexer.documents import MAX_DEPTH, MAX_EXPANDED_CHARS, DocumentError, _walk, load_document
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


# A description with a second colon: "mapping values are not allowed here", at line 6.
BROKEN_YAML = (DATA / "broken.yaml").read_text()


def test_broken_yaml_names_the_line_and_column_and_keeps_the_caret_under_it() -> None:
    with pytest.raises(DocumentError) as caught:
        load_document(BROKEN_YAML)
    message = str(caught.value)
    assert "<unicode string>" not in message
    first, source, caret = message.splitlines()
    assert first == (
        "not valid JSON or YAML: line 6, column 25: mapping values are not allowed here"
    )
    assert (caught.value.line, caught.value.column) == (6, 25)
    assert source.strip() == "description: Refunds: the last invoice"
    # The caret stands under the column it names: the second colon.
    assert source[caret.index("^")] == ":"
    assert caret.strip() == "^"


def test_a_yaml_error_with_a_context_says_where_that_context_started() -> None:
    with pytest.raises(DocumentError) as caught:
        load_document("tools: [a, b\nname: x\n")
    first = str(caught.value).splitlines()[0]
    assert "line 2, column 5" in first
    assert "while parsing a flow sequence that starts at line 1, column 8" in first


def test_broken_json_names_the_line_and_column_with_a_caret() -> None:
    text = '{\n  "capreg": 1,\n  "name" "x"\n}\n'
    with pytest.raises(DocumentError) as caught:
        load_document(text)
    first, source, caret = str(caught.value).splitlines()
    assert first == "not valid JSON or YAML: line 3, column 10: Expecting ':' delimiter"
    assert source[caret.index("^")] == '"'


def test_a_long_line_is_quoted_around_the_column_with_the_caret_still_under_it() -> None:
    text = "x: " + "y" * 5_000 + ": z\n"
    with pytest.raises(DocumentError) as caught:
        load_document(text)
    _, source, caret = str(caught.value).splitlines()
    assert len(source) < 100
    assert source.startswith("    ...")
    assert source[caret.index("^")] == ":"


def test_a_catalog_error_keeps_the_excerpt_on_lines_of_its_own() -> None:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(BROKEN_YAML, name="broken")
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("catalog 'broken': content: not valid JSON or YAML: line 6,")
    assert lines[2].strip() == "^"


BOM = "\ufeff"


@pytest.mark.parametrize(
    "text",
    [
        # Tab-indented JSON (as Windows editors write it): YAML refuses tabs, JSON does not.
        BOM + json.dumps({"capreg": 1, "name": "bom"}, indent="\t"),
        BOM + "capreg: 1\nname: bom\n",
        BOM + '{"capreg": 1, "name": "bom"}',
    ],
)
def test_a_utf8_byte_order_mark_is_ignored(text: str) -> None:
    assert load_document(text) == {"capreg": 1, "name": "bom"}


def test_a_catalog_file_with_a_byte_order_mark_registers_as_without_one() -> None:
    document = {
        "capreg": 1,
        "name": "bom",
        "description": "A catalog saved with a byte-order mark.",
        "tools": [{"name": "t", "description": "Does t.", "input_schema": {"type": "object"}}],
    }
    catalog = parse_catalog(BOM + json.dumps(document, indent="\t"))
    assert catalog.name == "bom"
    assert [tool.name for tool in catalog.tools] == ["t"]


@pytest.mark.parametrize("levels", range(MAX_DEPTH - 2, MAX_DEPTH + 3))
@pytest.mark.parametrize("inside", ["", "1", '"x"', '{"k": []}'])
def test_json_is_refused_at_the_depth_a_walk_of_every_value_refuses(
    levels: int, inside: str
) -> None:
    text = "[" * levels + inside + "]" * levels
    try:
        _walk(json.loads(text), strings=True)
        refused = False
    except DocumentError:
        refused = True
    if refused:
        with pytest.raises(DocumentError, match="nested"):
            load_document(text)
    else:
        assert load_document(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ('{"a": "\\ud83d\\ude00"}', False),  # an escaped pair: one character
        ('{"a": "\\\\ud800"}', False),  # an escaped backslash, then text
        ('{"a": "\\uD800"}', True),
        ('{"\\udfff": 1}', True),  # in a key
        ('{"a": "\ud800"}', True),  # the source itself holds one
        ('a: "\\U0000d800"', True),  # YAML's eight-digit escape
        ('a: "\\ud800"', True),
    ],
)
def test_lone_surrogates_are_refused_wherever_they_come_from(text: str, refused: bool) -> None:
    if refused:
        with pytest.raises(DocumentError, match="surrogate"):
            load_document(text)
    else:
        load_document(text)
