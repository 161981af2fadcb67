"""The bridge's answers are compact and lose nothing an agent needs: ids usable as given,
scores, weak matches and what to do about them, links, and the way forward on errors."""

from __future__ import annotations

import json

import grpc
import pytest

from mcp_bridge import payloads
from registry.client import InvalidRequest, NotFound
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.rpc.servicer import search_response, tool_schema
from tests.mcp_bridge.conftest import in_memory_bridge, payload

# Tool names may hold spaces and slashes (StableToolBench's do); a catalog name never does.
AWKWARD_IDS = ("weather/Get 5 day forecast", "rapid-api/v2/lookup / by zip", "mail/send_email")


def reply_with(*ids: str, weak: bool = False) -> pb.SearchResponse:
    return pb.SearchResponse(
        hits=[
            pb.SearchHit(
                id=tool_id,
                name=tool_id.split("/", 1)[1],
                catalog=tool_id.split("/", 1)[0],
                summary=f"Does what {tool_id} does.",
                score=1.23456 - position / 10,
                next_call=pb.GetSchemaRequest(ids=[tool_id]),
            )
            for position, tool_id in enumerate(ids)
        ],
        weak_match=weak,
    )


def listed_ids(text: str) -> list[str]:
    """The ids an agent reads off a search answer's text: each line's first column."""
    lines = text.split("\n")
    header = lines.index(payloads.HITS_HEADER)
    return [line.split("\t", 1)[0] for line in lines[header + 1 :]]


def test_every_hit_keeps_its_id_name_summary_and_a_rounded_score() -> None:
    answer = payloads.search_payload(reply_with(*AWKWARD_IDS))
    assert [set(hit) for hit in answer["hits"]] == [{"id", "name", "summary", "score"}] * 3
    first = answer["hits"][0]
    assert first == {
        "id": AWKWARD_IDS[0],
        "name": "Get 5 day forecast",
        "summary": f"Does what {AWKWARD_IDS[0]} does.",
        "score": 1.23,
    }
    assert answer["weak_match"] is False


def test_the_answer_says_once_how_to_fetch_instead_of_a_call_per_hit() -> None:
    answer = payloads.search_payload(reply_with(*AWKWARD_IDS))
    text = payloads.render(answer)
    assert answer["note"] == payloads.FETCH
    assert text.split("\n")[0] == payloads.FETCH
    assert payloads.GET_TOOL_SCHEMA in payloads.FETCH
    assert text.count(payloads.GET_TOOL_SCHEMA) == 1
    assert "next_call" not in json.dumps(answer)


def test_ids_read_off_the_text_are_the_hits_ids_even_with_spaces_and_slashes() -> None:
    text = payloads.render(payloads.search_payload(reply_with(*AWKWARD_IDS)))
    assert listed_ids(text) == list(AWKWARD_IDS)


def test_each_hit_line_carries_its_score_and_summary_on_one_line() -> None:
    reply = reply_with("a/x")
    reply.hits[0].summary = "First line\nsecond\tpart"
    text = payloads.render(payloads.search_payload(reply))
    assert text.split("\n")[-1] == "a/x\t1.23\tFirst line second part"


def test_a_weak_match_leads_the_text_with_what_to_do() -> None:
    answer = payloads.search_payload(reply_with("a/x", weak=True))
    text = payloads.render(answer)
    assert answer["weak_match"] is True
    assert text.split("\n")[0] == payloads.WEAK_MATCH
    assert "rephrase" in text.lower()
    assert listed_ids(text) == ["a/x"]


@pytest.mark.parametrize(
    ("reason", "name", "asks"),
    [
        (pb.WEAK_REASON_NO_CLOSE_TOOL, "no_close_tool", "tell the user no tool here does it"),
        (pb.WEAK_REASON_NEAREST_TOOLS_ALIKE, "nearest_tools_alike", "ask the user which is meant"),
    ],
)
def test_a_weak_matchs_reason_says_whether_to_stop_or_to_ask(
    reason: pb.WeakReason.ValueType, name: str, asks: str
) -> None:
    reply = reply_with("a/x", weak=True)
    reply.weak_reason = reason
    answer = payloads.search_payload(reply)
    assert answer["weak_reason"] == name
    assert asks in payloads.render(answer).split("\n")[0].lower()


def test_no_hits_is_the_note_alone() -> None:
    answer = payloads.search_payload(pb.SearchResponse())
    assert answer == {"hits": [], "weak_match": False, "note": payloads.NO_MATCH}
    assert payloads.render(answer) == payloads.NO_MATCH


def test_the_text_is_shorter_than_the_same_answer_as_json() -> None:
    answer = payloads.search_payload(reply_with(*AWKWARD_IDS))
    assert len(payloads.render(answer)) < len(json.dumps(answer, separators=(",", ":")))


def test_a_hits_name_is_the_part_of_its_id_after_the_catalog(sample_registry: Registry) -> None:
    # Why the listing may leave the name out: the id already spells it.
    reply = search_response(sample_registry.search("refund an order and email the customer", 10))
    assert reply.hits
    assert all(hit.id == f"{hit.catalog}/{hit.name}" for hit in reply.hits)


def test_a_schema_answer_is_json_that_round_trips_with_its_links_and_their_note(
    sample_registry: Registry,
) -> None:
    ids = ["support/create_ticket", "support/get_refund_status"]
    reply = pb.GetSchemaResponse(tools=[tool_schema(e) for e in sample_registry.schemas(ids)])
    answer = payloads.schema_payload(reply)
    text = payloads.render(answer)
    assert json.loads(text) == answer
    assert len(text) < len(json.dumps(answer, ensure_ascii=False))
    tool = answer["tools"][0]
    assert set(tool["function"]) == {"name", "description", "parameters"}
    assert tool["function"]["parameters"] == json.loads(reply.tools[0].input_schema)
    assert tool["returns"] == json.loads(reply.tools[0].output_schema)
    link = tool["links"][0]
    assert link == {
        "id": "support/get_ticket",
        "rel": "read",
        "arguments": {"ticket_id": "$.ticket_id"},
    }
    assert answer["note"] == payloads.LINKS
    assert payloads.GET_TOOL_SCHEMA in payloads.LINKS


def test_a_schema_answer_without_links_has_no_links_note(sample_registry: Registry) -> None:
    reply = pb.GetSchemaResponse(
        tools=[tool_schema(e) for e in sample_registry.schemas(["finance/get_fx_rate"])]
    )
    assert not reply.tools[0].links
    assert "note" not in payloads.schema_payload(reply)


def test_errors_keep_their_way_forward_in_the_text() -> None:
    unknown = NotFound(
        grpc.StatusCode.NOT_FOUND,
        "unknown tool id: 'hr/get_employe' (did you mean: hr/get_employee)",
    )
    answer = payloads.schema_recovery(unknown, ["hr/get_employe"])
    assert json.loads(payloads.render(answer)) == answer
    assert answer["next_calls"] == [payloads.call("get_tool_schema", ids=["hr/get_employee"])]
    empty = InvalidRequest(grpc.StatusCode.INVALID_ARGUMENT, "query must not be empty")
    assert json.loads(payloads.render(payloads.search_recovery(empty)))["fix"] == (
        payloads.FIX_SEARCH
    )


async def test_ids_in_a_search_answers_text_fetch_their_schemas_as_given(
    registry_address: str,
) -> None:
    async with in_memory_bridge(registry_address) as client:
        found = await client.call_tool(
            "search_tools", {"query": "refund a customer's damaged order", "limit": 4}
        )
        [text] = found.content
        assert text.type == "text"
        ids = listed_ids(text.text)
        fetched = await client.call_tool("get_tool_schema", {"ids": ids})
    assert ids == [hit["id"] for hit in payload(found)["hits"]]
    assert not fetched.is_error
    assert [tool["id"] for tool in payload(fetched)["tools"]] == ids
