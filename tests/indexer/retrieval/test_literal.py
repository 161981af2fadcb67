"""Names a request spells out: which count, and how they are found."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.model import Tool
from indexer.naming import function_name, spelling
from indexer.retrieval import literal
from indexer.retrieval.literal import Literals, Named, Spelled, lookup_key, tokens


def spelled(tool_id: str) -> Spelled:
    catalog, _, name = tool_id.partition("/")
    tool = Tool(catalog=catalog, name=name, description="", input_schema={})
    return tool, spelling(catalog, name, function_name(catalog, name))


TOOLS = [
    spelled("support/create_ticket"),
    spelled("editing/copyEditing"),
    spelled("web/search"),
    spelled("Context7/get-library-docs"),
]
CATALOGS = {"support": 0, "editing": 1, "web": 2, "Context7": 3}
ROWS = {tool.id: row for row, (tool, _) in enumerate(TOOLS)}


def named(literals: Literals, text: str) -> Named:
    return literals.named(text, ROWS.get, CATALOGS.get)


def test_only_names_that_read_as_identifiers_count() -> None:
    assert lookup_key("create_ticket") == "create_ticket"
    assert lookup_key("12306-mcp") == "12306-mcp"
    assert lookup_key("Context7") == "context7"
    assert lookup_key("getWeather") == "getWeather"  # its own case only
    assert lookup_key("search") is None
    assert lookup_key("time") is None
    assert lookup_key("a1") is None  # too short to be told from noise


def test_a_request_names_tools_and_catalogs() -> None:
    literals = Literals(TOOLS, CATALOGS)
    found = named(literals, "Open one with create_ticket, then look it up. Use context7.")
    assert found.rows.tolist() == [0]
    assert found.catalogs.tolist() == [3]
    # Full ids and function names count, in any case.
    assert named(literals, "call SUPPORT/create_ticket").rows.tolist() == [0]
    assert named(literals, "call support__create_ticket now").rows.tolist() == [0]


def test_a_shortened_function_name_is_found_as_it_is_and_spliced_away() -> None:
    odd, function = spelled("support/open ticket (v2)")
    assert function != "support__open ticket (v2)"  # made safe and suffixed with a hash
    literals = Literals([*TOOLS, (odd, function)], CATALOGS)
    rows = {**ROWS, odd.id: 4}
    assert literals.named(f"call {function.upper()}", rows.get, CATALOGS.get).rows.tolist() == [4]
    gone = literals.spliced([(odd, function)], [], [], [])
    assert not len(gone.named(f"call {function}", rows.get, CATALOGS.get).rows)


def test_words_are_not_names() -> None:
    literals = Literals(TOOLS, CATALOGS)
    # "copyediting" is a word; `copyEditing` is the tool's name.
    assert not len(named(literals, "Please perform copyediting on the manual.").rows)
    assert named(literals, "run copyEditing on the manual").rows.tolist() == [1]
    # A plain-word tool or catalog name is left to the ranking.
    found = named(literals, "search the web for support")
    assert not len(found.rows)
    assert not len(found.catalogs)


@given(st.text(max_size=300))
def test_any_text_names_only_known_rows(text: str) -> None:
    found = named(Literals(TOOLS, CATALOGS), text)
    assert set(found.rows.tolist()) <= {0, 1, 2, 3}
    assert set(found.catalogs.tolist()) <= {0, 1, 2, 3}
    assert all(token == token.strip("_-./:") for token in tokens(text))


def test_a_spliced_lookup_equals_one_filed_from_scratch() -> None:
    before = Literals(TOOLS[:3], list(CATALOGS)[:3])
    moved = spelled("web/search_pages")
    after = before.spliced([TOOLS[2]], ["web"], [moved, TOOLS[3]], ["web", "Context7"])
    scratch = Literals([*TOOLS[:2], moved, TOOLS[3]], CATALOGS)
    rows = {**ROWS, moved[0].id: 2}
    for text in ("use search_pages on the web", "call web/search", "use context7", "web__search"):
        got, want = (x.named(text, rows.get, CATALOGS.get) for x in (after, scratch))
        assert got.rows.tolist() == want.rows.tolist(), text
        assert got.catalogs.tolist() == want.catalogs.tolist(), text
    # The lookup it was spliced from is unchanged.
    assert named(before, "call web/search").rows.tolist() == [2]
    assert not len(named(before, "use context7").catalogs)


def catalog_tools(catalog: str, names: list[str]) -> list[Spelled]:
    return [spelled(f"{catalog}/{n}") for n in names]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    changes=st.lists(
        st.tuples(
            st.sampled_from(["crm-2", "web_x", "docs9"]),
            st.lists(
                st.sampled_from(["find_lead", "get_page", "list_docs", "open_it"]), unique=True
            ),
        ),
        max_size=12,
    ),
    fold_past=st.sampled_from([1, 4, 10_000]),
)
def test_a_lookup_spliced_change_after_change_equals_one_filed_from_scratch(
    changes: list[tuple[str, list[str]]], fold_past: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(literal, "LAYER_MIN", fold_past)
    monkeypatch.setattr(literal, "LAYER_SHARE", 0.0)
    # The tool objects filed are the ones removed, as a snapshot's segments hold them.
    live: dict[str, list[Spelled]] = {
        "crm-2": catalog_tools("crm-2", ["find_lead"]),
        "web_x": catalog_tools("web_x", ["get_page", "open_it"]),
    }
    lookup = Literals([t for tools in live.values() for t in tools], list(live))
    for catalog, names in changes:  # an empty list deletes the catalog
        before = live.pop(catalog, None)
        if names:
            live[catalog] = catalog_tools(catalog, names)
        lookup = lookup.spliced(
            before or [],
            [catalog] if before is not None else [],
            live.get(catalog, []),
            [catalog] if names else [],
        )
    scratch = Literals([t for tools in live.values() for t in tools], list(live))
    every = [
        t
        for c in ("crm-2", "web_x", "docs9")
        for t in catalog_tools(c, ["find_lead", "get_page", "list_docs", "open_it"])
    ]
    rows = {tool.id: row for row, (tool, _) in enumerate(every)}
    codes = {name: code for code, name in enumerate(("crm-2", "web_x", "docs9"))}
    texts = [f"call {t.id} or {t.name} or {f}" for t, f in every]
    for text in [*texts, "use crm-2 and docs9 on web_x"]:
        got, want = (x.named(text, rows.get, codes.get) for x in (lookup, scratch))
        assert got.rows.tolist() == want.rows.tolist(), text
        assert got.catalogs.tolist() == want.catalogs.tolist(), text
