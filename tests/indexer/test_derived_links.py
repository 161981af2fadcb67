"""Derived links: identifiers one tool returns and another requires, CRUD families, and the
declared links that win over them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.derived_links import (
    FAMILY,
    FEEDS,
    CatalogLinks,
    crud_name,
    derive_links,
    singular,
    tool_links,
)
from indexer.formats import parse_catalog
from indexer.formats.rules import LINK_REL
from indexer.model import MAX_LINKS, Tool, ToolLink
from tests.conftest import CATALOGS

# `tool("open_case", inputs=schema("title")).content_hash()` before tools had links.
BEFORE_LINKS = "f8bebc24ce9bc30ab8d03df06a8ab094f6cf7092dd9ddad132bbeedbebab4735"


def schema(*names: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
        "required": list(required),
    }


def tool(name: str, *, inputs: dict[str, Any], output: dict[str, Any] | None = None) -> Tool:
    return Tool(
        catalog="desk", name=name, description=name, input_schema=inputs, output_schema=output
    )


def by_target(links: tuple[ToolLink, ...]) -> dict[str, tuple[str, dict[str, str]]]:
    return {link.target_id: (link.rel, dict(link.arguments)) for link in links}


def test_an_identifier_one_tool_returns_and_another_requires_feeds_it() -> None:
    tools = [
        tool("open_case", inputs=schema("title"), output=schema("case_id", "state")),
        tool("escalate", inputs=schema("case_id", "reason", required=("case_id", "reason"))),
        tool("note", inputs=schema("case_id")),  # optional only: nothing to justify a link
    ]
    derived = derive_links(tools)
    assert derived == {
        "open_case": (
            ToolLink(
                rel=FEEDS,
                target_id="desk/escalate",
                arguments={"case_id": "$.case_id"},
                derived=True,
            ),
        )
    }


def test_values_that_are_not_identifiers_feed_nothing() -> None:
    tools = [
        tool("get_rate", inputs=schema("pair"), output=schema("currency", "subject")),
        tool("pay", inputs=schema("currency", "subject", required=("currency", "subject"))),
    ]
    assert derive_links(tools) == {}


def test_a_crud_family_links_within_its_resource() -> None:
    ids = schema("ticket_id", required=("ticket_id",))
    tools = [
        tool("create_ticket", inputs=schema("subject"), output=schema("id")),
        tool("getTicket", inputs=ids, output=schema("ticket_id", "status")),
        tool(
            "tickets-list",
            inputs=schema("query"),
            output={
                "type": "object",
                "properties": {
                    "tickets": {"type": "array", "items": schema("ticket_id")},
                },
            },
        ),
        tool("update_ticket", inputs=ids),
        tool("remove_ticket", inputs=ids),
        tool("create_invoice", inputs=schema("amount")),
    ]
    links = tool_links(tools)
    assert by_target(links["create_ticket"]) == {
        "desk/getTicket": ("read", {"ticket_id": "$.id"}),
        "desk/tickets-list": ("collection", {}),
    }
    assert by_target(links["tickets-list"]) == {
        "desk/getTicket": ("item", {"ticket_id": "$.tickets[0].ticket_id"}),
    }
    assert by_target(links["getTicket"]) == {
        "desk/update_ticket": ("update", {"ticket_id": "$.ticket_id"}),
        "desk/remove_ticket": ("delete", {"ticket_id": "$.ticket_id"}),
    }
    assert links["create_invoice"] == links["update_ticket"] == ()
    assert all(link.derived for found in links.values() for link in found)


def test_a_crud_link_replaces_the_feeds_link_between_the_same_two_tools() -> None:
    ids = schema("ticket_id", required=("ticket_id",))
    tools = [
        tool("get_ticket", inputs=ids, output=schema("ticket_id")),
        tool("update_ticket", inputs=ids),
    ]
    [link] = derive_links(tools)["get_ticket"]
    assert (link.rel, dict(link.arguments)) == ("update", {"ticket_id": "$.ticket_id"})


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("list_tickets", ("list", "ticket")),
        ("search_companies", ("list", "company")),
        ("getCompany", ("get", "company")),
        ("ticket-create", ("create", "ticket")),
        ("add_line_items", ("create", "line_item")),
        ("show_status", ("get", "status")),
        ("fetch_addresses", ("get", "address")),
        ("delete", None),
        ("close_ticket", None),
    ],
)
def test_a_crud_name_is_a_verb_and_a_singular_resource(
    name: str, parsed: tuple[str, str] | None
) -> None:
    assert crud_name(name) == parsed


def test_plural_resources_become_singular() -> None:
    words = ["tickets", "companies", "statuses", "boxes", "addresses", "status", "analysis"]
    assert [singular(w) for w in words] == [
        "ticket",
        "company",
        "status",
        "box",
        "address",
        "status",
        "analysis",
    ]


def test_a_declared_link_replaces_the_derived_link_to_the_same_target() -> None:
    ids = schema("ticket_id", required=("ticket_id",))
    declared = ToolLink(rel="read", target_id="desk/get_ticket", arguments={"ticket_id": "$.n"})
    tools = [
        tool("create_ticket", inputs=schema("subject"), output=schema("ticket_id")),
        tool("get_ticket", inputs=ids),
        tool("close_ticket", inputs=ids),
    ]
    tools[0] = replace(tools[0], links=(declared,))
    links = tool_links(tools)["create_ticket"]
    assert links[0] == declared
    assert by_target(links) == {
        "desk/get_ticket": ("read", {"ticket_id": "$.n"}),
        "desk/close_ticket": (FEEDS, {"ticket_id": "$.ticket_id"}),
    }
    # Another relation to the same target: still the author's word only.
    other = replace(declared, rel="details")
    tools[0] = replace(tools[0], links=(other,))
    assert [link.rel for link in tool_links(tools)["create_ticket"]] == ["details", FEEDS]


def test_a_tool_gets_at_most_32_links_declared_first() -> None:
    keys = [f"k{i:02}_id" for i in range(MAX_LINKS + 5)]
    many = [tool(f"act_{key}", inputs=schema(key, required=(key,))) for key in keys]
    declared = ToolLink(rel="audit", target_id="audit/log")
    source = tool("open_case", inputs=schema("title"), output=schema(*keys))
    links = tool_links([replace(source, links=(declared,)), *many])["open_case"]
    assert len(links) == MAX_LINKS
    assert links[0] == declared
    assert [link.target_id for link in links[1:]] == [f"desk/act_{key}" for key in keys[:31]]


def test_an_identifier_more_than_32_tools_require_feeds_none_of_them() -> None:
    many = [
        tool(f"act_{i:02}", inputs=schema("case_id", required=("case_id",)))
        for i in range(MAX_LINKS + 1)
    ]
    source = tool("open_case", inputs=schema("title"), output=schema("case_id"))
    assert derive_links([source, *many]) == {}
    assert len(derive_links([source, *many[:MAX_LINKS]])["open_case"]) == MAX_LINKS


def test_derived_relations_are_valid_declared_relations() -> None:
    for rel in (FEEDS, *FAMILY.values()):
        assert LINK_REL.fullmatch(rel)


names = st.sampled_from(
    ["create_case", "get_case", "list_cases", "update_case", "delete_case", "close_case"]
)
fields = st.lists(st.sampled_from(["case_id", "id", "owner_id", "title"]), max_size=3)


@given(st.lists(st.tuples(names, fields, fields, fields), max_size=8, unique_by=lambda t: t[0]))
def test_derived_links_are_deterministic_bounded_and_never_loop(
    specs: list[tuple[str, list[str], list[str], list[str]]],
) -> None:
    tools = [
        tool(name, inputs=schema(*ins, *req, required=tuple(req)), output=schema(*out))
        for name, ins, req, out in specs
    ]
    derived = derive_links(tools)
    assert derived == derive_links(list(reversed(tools)))
    for name, links in derived.items():
        assert 0 < len(links) <= MAX_LINKS
        assert len({link.target_id for link in links}) == len(links)
        assert all(link.derived and link.target_id != f"desk/{name}" for link in links)


def test_the_sample_catalogs_declare_links_the_registry_keeps_first() -> None:
    catalog = parse_catalog((CATALOGS / "support.yaml").read_text())
    links = tool_links(catalog.tools)["create_ticket"]
    assert links[0] == ToolLink(
        rel="read", target_id="support/get_ticket", arguments={"ticket_id": "$.ticket_id"}
    )
    assert links[2].derived


def test_a_tools_content_hash_changes_with_its_links_and_not_without_them() -> None:
    plain = tool("open_case", inputs=schema("title"))
    linked = replace(plain, links=(ToolLink(rel="next", target_id="desk/get_case"),))
    mapped = replace(
        plain,
        links=(ToolLink(rel="next", target_id="desk/get_case", arguments={"case_id": "$.id"}),),
    )
    hashes = {plain.content_hash(), linked.content_hash(), mapped.content_hash()}
    assert len(hashes) == 3
    # A tool without links hashes as it did before links existed (the value the previous
    # model gave), so an upgrade reports no change for catalogs that declare none.
    assert plain.content_hash() == BEFORE_LINKS


def test_a_catalogs_links_derived_when_first_read_are_those_of_tool_links() -> None:
    tools = [
        tool("list_tickets", inputs=schema("status"), output=schema("ticket_id")),
        tool("get_ticket", inputs=schema("ticket_id", required=("ticket_id",))),
        tool("close_ticket", inputs=schema("ticket_id", required=("ticket_id",))),
    ]
    lazy = CatalogLinks(tools)
    eager = tool_links(tools)
    assert {t.name: lazy.of(t.name) for t in tools} == eager
    assert lazy.of("list_tickets")  # the family and feeds links are there
    assert lazy.of("no_such_tool") == ()
