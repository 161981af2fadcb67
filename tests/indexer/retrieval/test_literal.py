"""Names a request spells out: which count, and how they are found."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from indexer.retrieval.literal import Literals, lookup_key, tokens

TOOLS = [
    ("support/create_ticket", "create_ticket", "support__create_ticket"),
    ("editing/copyEditing", "copyEditing", "editing__copyEditing"),
    ("web/search", "search", "web__search"),
    ("Context7/get-library-docs", "get-library-docs", "Context7__get-library-docs"),
]
CATALOGS = {"support": 0, "editing": 1, "web": 2, "Context7": 3}


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
    named = literals.named("Open one with create_ticket, then look it up. Use context7.")
    assert named.rows.tolist() == [0]
    assert named.catalogs.tolist() == [3]
    # Full ids and function names count, in any case.
    assert literals.named("call SUPPORT/create_ticket").rows.tolist() == [0]
    assert literals.named("call support__create_ticket now").rows.tolist() == [0]


def test_words_are_not_names() -> None:
    literals = Literals(TOOLS, CATALOGS)
    # "copyediting" is a word; `copyEditing` is the tool's name.
    assert not len(literals.named("Please perform copyediting on the manual.").rows)
    assert literals.named("run copyEditing on the manual").rows.tolist() == [1]
    # A plain-word tool or catalog name is left to the ranking.
    named = literals.named("search the web for support")
    assert not len(named.rows)
    assert not len(named.catalogs)


@given(st.text(max_size=300))
def test_any_text_names_only_known_rows(text: str) -> None:
    named = Literals(TOOLS, CATALOGS).named(text)
    assert set(named.rows.tolist()) <= {0, 1, 2, 3}
    assert set(named.catalogs.tolist()) <= {0, 1, 2, 3}
    assert all(token == token.strip("_-./:") for token in tokens(text))
