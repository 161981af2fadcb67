"""Declared links in catalog files: native `links:` and MCP `_meta`, and every rule named."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from indexer.formats import CatalogError, parse_catalog
from indexer.model import MAX_LINKS, ToolLink

OBJECT = {"type": "object"}
TICKET_ID = {"type": "object", "properties": {"ticket_id": {"type": "string"}}}


def desk(links: object, *, name: str = "create_ticket") -> dict[str, Any]:
    """A native document whose tool `name` declares `links`."""
    tools: list[dict[str, Any]] = [
        {"name": "create_ticket", "description": "Opens a ticket.", "input_schema": OBJECT},
        {"name": "get_ticket", "description": "One ticket.", "input_schema": TICKET_ID},
    ]
    for tool in tools:
        if tool["name"] == name:
            tool["links"] = links
    return {"capreg": 1, "name": "desk", "description": "Helpdesk.", "tools": tools}


def problems(document: dict[str, Any]) -> list[str]:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(yaml.safe_dump(document))
    assert caught.value.catalog == "desk"
    return caught.value.problems


def test_a_native_link_to_a_bare_tool_name_is_resolved_to_its_id() -> None:
    link = {"rel": "read", "target": "get_ticket", "arguments": {"ticket_id": "$.id"}}
    catalog = parse_catalog(yaml.safe_dump(desk([link])))
    created, fetched = catalog.tools
    assert created.links == (
        ToolLink(rel="read", target_id="desk/get_ticket", arguments={"ticket_id": "$.id"}),
    )
    assert not created.links[0].derived
    assert fetched.links == ()


def test_a_target_written_with_its_own_catalog_is_the_same_as_a_bare_name() -> None:
    bare = parse_catalog(yaml.safe_dump(desk([{"rel": "read", "target": "get_ticket"}])))
    full = parse_catalog(yaml.safe_dump(desk([{"rel": "read", "target": "desk/get_ticket"}])))
    assert bare.tools[0].links == full.tools[0].links


def test_a_target_in_another_catalog_is_kept_for_the_reader_to_resolve() -> None:
    link = {"rel": "bill", "target": "finance/get_invoice", "arguments": {"any_name": "$.x"}}
    catalog = parse_catalog(yaml.safe_dump(desk([link])))
    assert catalog.tools[0].links[0].target_id == "finance/get_invoice"
    assert dict(catalog.tools[0].links[0].arguments) == {"any_name": "$.x"}


def test_an_mcp_tool_declares_links_in_its_meta() -> None:
    document = {
        "tools": [
            {
                "name": "create_ticket",
                "inputSchema": OBJECT,
                "_meta": {
                    "capreg/links": [
                        {"rel": "read", "target": "get_ticket", "arguments": {"ticket_id": "$.id"}}
                    ]
                },
            },
            {"name": "get_ticket", "inputSchema": TICKET_ID},
        ]
    }
    catalog = parse_catalog(json.dumps(document), name="desk")
    assert catalog.tools[0].links == (
        ToolLink(rel="read", target_id="desk/get_ticket", arguments={"ticket_id": "$.id"}),
    )


def test_an_mcp_link_problem_names_the_meta_key_as_written() -> None:
    document = {
        "tools": [
            {
                "name": "create_ticket",
                "inputSchema": OBJECT,
                "_meta": {"capreg/links": [{"rel": "read", "target": "nowhere"}]},
            }
        ]
    }
    with pytest.raises(CatalogError) as caught:
        parse_catalog(json.dumps(document), name="desk")
    [problem] = caught.value.problems
    assert problem.startswith("tools[0] 'create_ticket'._meta.capreg/links[0].target:")


@pytest.mark.parametrize(
    ("link", "where", "rule"),
    [
        ({"rel": "Read", "target": "get_ticket"}, "links[0].rel", "must match"),
        ({"rel": "read\n", "target": "get_ticket"}, "links[0].rel", "must match"),
        ({"rel": "r" * 65, "target": "get_ticket"}, "links[0].rel", "must match"),
        ({"target": "get_ticket"}, "links[0].rel", "must match"),
        ({"rel": "read"}, "links[0].target", "is required"),
        ({"rel": "read", "target": "get_tiket"}, "links[0].target", "no tool 'get_tiket'"),
        ({"rel": "read", "target": "desk/get_tiket"}, "links[0].target", "no tool 'get_tiket'"),
        ({"rel": "read", "target": "bad name/x"}, "links[0].target", "no tool"),
        (
            {"rel": "read", "target": "get_ticket", "arguments": {"ticket": "$.id"}},
            "links[0].arguments.ticket",
            "is not an input property of 'get_ticket'",
        ),
        (
            {"rel": "read", "target": "get_ticket", "arguments": {"ticket_id": "id"}},
            "links[0].arguments.ticket_id",
            "starting with '$'",
        ),
        (
            {"rel": "read", "target": "get_ticket", "arguments": ["$.id"]},
            "links[0].arguments",
            "must be an object",
        ),
        ({"rel": "read", "target": "get_ticket", "args": {}}, "links[0]", "unknown key(s) args"),
        ("get_ticket", "links[0]", "must be an object"),
    ],
)
def test_a_broken_link_is_named_with_its_tool_and_rule(link: object, where: str, rule: str) -> None:
    [problem] = problems(desk([link]))
    assert problem.startswith(f"tools[0] 'create_ticket'.{where}: ")
    assert rule in problem


def test_links_must_be_a_list_of_at_most_32() -> None:
    assert problems(desk({"rel": "read"})) == [
        "tools[0] 'create_ticket'.links: must be a list of links ({rel, target, arguments})"
    ]
    many = [{"rel": f"r{i}", "target": "get_ticket"} for i in range(MAX_LINKS + 1)]
    [problem] = problems(desk(many))
    assert f"at most {MAX_LINKS} links" in problem


def test_the_same_relation_to_the_same_target_twice_is_refused() -> None:
    link = {"rel": "read", "target": "get_ticket"}
    [problem] = problems(desk([link, {**link, "target": "desk/get_ticket"}]))
    assert problem.startswith("tools[0] 'create_ticket'.links[1]: repeats the link 'read'")


def test_a_tool_may_link_to_itself_under_several_relations() -> None:
    links = [{"rel": "next", "target": "get_ticket"}, {"rel": "retry", "target": "get_ticket"}]
    catalog = parse_catalog(yaml.safe_dump(desk(links, name="get_ticket")))
    assert [link.rel for link in catalog.tools[1].links] == ["next", "retry"]
